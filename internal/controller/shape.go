package controller

import (
	"context"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

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
