package csrcleaner

import (
	"context"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "csrcleaner"

// How long requests are kept, as upstream.
const (
	IssuedExpiration  = time.Hour
	DeniedExpiration  = time.Hour
	FailedExpiration  = time.Hour
	PendingExpiration = 24 * time.Hour
)

// Controller is the CSR cleaner.
type Controller struct {
	controller.Base
	// Interval between sweeps (0: an hour).
	Interval time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base}, nil
}

// sweepKey is the only key in the queue: a sweep over all requests.
const sweepKey = "sweep"

// Run sweeps every Interval until ctx ends; workers is unused (one sweep
// at a time).
func (c *Controller) Run(ctx context.Context, _ int) error {
	interval := c.Interval
	if interval <= 0 {
		interval = time.Hour
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Name, Client: c.Client, Logger: c.Logger})
	inf := b.Informers().Certificates().V1().CertificateSigningRequests()
	lister := inf.Lister()
	b.WaitsFor(inf.Informer())
	b.Queue().Add(sweepKey)
	log := b.Logger()
	observe := func(string) (State, bool, error) {
		csrs, err := lister.List(labels.Everything())
		return State{CSRs: csrs, Now: now()}, err == nil, err
	}
	return b.Run(ctx, 1, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return controller.Shape[State, Plan]{Observe: observe, Plan: plan, Log: log,
			Apply: func(ctx context.Context, _ State, p Plan) (reconcile.Result, error) {
				c.sweep(ctx, log, p.Delete)
				return reconcile.Result{RequeueAfter: interval}, nil
			}}.Reconcile
	})
}

// sweep deletes the requests the plan found done with.
func (c *Controller) sweep(ctx context.Context, log *slog.Logger, expired []expiredCSR) {
	for _, e := range expired {
		csr, why := e.CSR, e.Why
		uid := csr.UID
		err := c.Client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			log.Warn("deleting certificate signing request", "csr", csr.Name, "err", err)
			continue
		}
		log.Info("deleted certificate signing request", "csr", csr.Name, "reason", why)
	}
}
