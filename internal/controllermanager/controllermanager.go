package controllermanager

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/controller/garbagecollector"
	"plainkube.dev/plainkube/internal/controller/namespace"
)

// New builds every controller against cfg.
func New(cfg *rest.Config) ([]controller.Controller, error) {
	gc, err := garbagecollector.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	ns, err := namespace.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("namespace controller: %w", err)
	}
	return []controller.Controller{gc, ns}, nil
}

// Run runs every controller until ctx ends.
func Run(ctx context.Context, cfg *rest.Config) error {
	cs, err := New(cfg)
	if err != nil {
		return err
	}
	controller.RunAll(ctx, cs...)
	return nil
}
