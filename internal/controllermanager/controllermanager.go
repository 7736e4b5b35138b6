package controllermanager

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/controller/deployment"
	"plainkube.dev/plainkube/internal/controller/endpoints"
	"plainkube.dev/plainkube/internal/controller/endpointslice"
	"plainkube.dev/plainkube/internal/controller/garbagecollector"
	"plainkube.dev/plainkube/internal/controller/namespace"
	"plainkube.dev/plainkube/internal/controller/nodelifecycle"
	"plainkube.dev/plainkube/internal/controller/podgc"
	"plainkube.dev/plainkube/internal/controller/replicaset"
	"plainkube.dev/plainkube/internal/controller/rootcacert"
	"plainkube.dev/plainkube/internal/controller/serviceaccount"
)

// Options configure the controllers.
type Options struct {
	// RootCA is published in every namespace as the kube-root-ca.crt
	// ConfigMap; without it that controller does not run.
	RootCA []byte
}

// New builds every controller against cfg.
func New(cfg *rest.Config, o Options) ([]controller.Controller, error) {
	var out []controller.Controller
	add := func(name string, c controller.Controller, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, c)
		return nil
	}
	deploy, err := deployment.New(cfg)
	if err := add("deployment controller", deploy, err); err != nil {
		return nil, err
	}
	rs, err := replicaset.New(cfg)
	if err := add("replicaset controller", rs, err); err != nil {
		return nil, err
	}
	gc, err := garbagecollector.New(cfg)
	if err := add("garbage collector", gc, err); err != nil {
		return nil, err
	}
	ns, err := namespace.New(cfg)
	if err := add("namespace controller", ns, err); err != nil {
		return nil, err
	}
	slices, err := endpointslice.New(cfg)
	if err := add("endpointslice controller", slices, err); err != nil {
		return nil, err
	}
	eps, err := endpoints.New(cfg)
	if err := add("endpoints controller", eps, err); err != nil {
		return nil, err
	}
	sa, err := serviceaccount.New(cfg)
	if err := add("serviceaccount controller", sa, err); err != nil {
		return nil, err
	}
	nl, err := nodelifecycle.New(cfg)
	if err := add("node lifecycle controller", nl, err); err != nil {
		return nil, err
	}
	pg, err := podgc.New(cfg)
	if err := add("pod GC", pg, err); err != nil {
		return nil, err
	}
	if len(o.RootCA) > 0 {
		rc, err := rootcacert.New(cfg, o.RootCA)
		if err := add("root CA publisher", rc, err); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Run runs every controller until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	cs, err := New(cfg, o)
	if err != nil {
		return err
	}
	controller.RunAll(ctx, cs...)
	return nil
}
