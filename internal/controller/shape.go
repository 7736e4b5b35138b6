package controller

import (
	"context"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Shape is the one shape of a controller's reconcile: Observe reads the
// object named by a key and what it depends on from the informer caches
// into a State S (ok false: nothing to do, the object is gone); Plan, a
// pure function, decides the writes P; Apply makes them.
type Shape[S, P any] struct {
	Observe func(key string) (st S, ok bool, err error)
	Plan    func(S) P
	Apply   func(context.Context, S, P) (reconcile.Result, error)
	Log     *slog.Logger
}

// Reconcile is one pass over key: observe, plan, apply. A write that lost
// a race with another (the cache was behind: a conflict) is retried with
// backoff without being reported as a failure.
func (s Shape[S, P]) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	st, ok, err := s.Observe(key)
	if !ok || err != nil {
		return reconcile.Result{}, err
	}
	res, err := s.Apply(ctx, st, s.Plan(st))
	if apierrors.IsConflict(err) {
		s.Log.Debug("conflict; will retry", "key", key, "err", err)
		return reconcile.Result{Requeue: true}, nil
	}
	return res, err
}

// Base is what every controller's struct embeds: its name (Name implements
// reconcile.Controller), its client, its logger and the process's shared
// informers.
type Base struct {
	// Logger defaults to slog.Default() with the controller's name.
	Logger *slog.Logger
	// Informers, when set, supplies the Pod and Node informers, shared with
	// the process's other components (see reconcile.SharedInformers).
	Informers *reconcile.SharedInformers
	// Client is the controller's client of the API server.
	Client kubernetes.Interface
	name   string
}

// NewBase builds a controller's client from cfg.
func NewBase(name string, cfg *rest.Config) (Base, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Base{}, err
	}
	return Base{Client: cs, name: name}, nil
}

// Name implements reconcile.Controller.
func (b *Base) Name() string { return b.name }

// ShareInformers makes the controller take its Pod and Node informers
// from s, the process's shared ones.
func (b *Base) ShareInformers(s *reconcile.SharedInformers) { b.Informers = s }

// Log is the controller's logger: Logger, else slog.Default() with the
// controller's name.
func (b *Base) Log() *slog.Logger { return loggerFor(b.Logger, b.name) }

func loggerFor(log *slog.Logger, name string) *slog.Logger {
	if log == nil {
		return slog.Default().With("controller", name)
	}
	return log
}
