package csrcleaner

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
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
	// Interval between sweeps (0: an hour).
	Interval time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	client kubernetes.Interface
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{client: cs}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

// Expired reports whether csr is done with at now, and why.
func Expired(csr *certificatesv1.CertificateSigningRequest, now time.Time) (bool, string) {
	older := func(t metav1.Time, d time.Duration) bool { return !t.IsZero() && now.Sub(t.Time) > d }
	issued := len(csr.Status.Certificate) > 0
	approved, denied := false, false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
			if issued && older(c.LastUpdateTime, IssuedExpiration) {
				return true, "issued more than an hour ago"
			}
		case certificatesv1.CertificateDenied:
			denied = true
			if older(c.LastUpdateTime, DeniedExpiration) {
				return true, "denied more than an hour ago"
			}
		case certificatesv1.CertificateFailed:
			if older(c.LastUpdateTime, FailedExpiration) {
				return true, "failed more than an hour ago"
			}
		}
	}
	if !approved && !denied && older(csr.CreationTimestamp, PendingExpiration) {
		return true, "pending for more than a day"
	}
	if approved && issued {
		if block, _ := pem.Decode(csr.Status.Certificate); block != nil {
			if cert, err := x509.ParseCertificate(block.Bytes); err == nil && now.After(cert.NotAfter) {
				return true, "its certificate expired"
			}
		}
	}
	return false, ""
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
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Name, Client: c.client, Logger: c.Logger})
	inf := b.Informers().Certificates().V1().CertificateSigningRequests()
	lister := inf.Lister()
	b.WaitsFor(inf.Informer())
	b.Queue().Add(sweepKey)
	log := b.Logger()
	return b.Run(ctx, 1, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, _ string) (reconcile.Result, error) {
			csrs, err := lister.List(labels.Everything())
			if err != nil {
				return reconcile.Result{}, err
			}
			c.sweep(ctx, log, csrs, now())
			return reconcile.Result{RequeueAfter: interval}, nil
		}
	})
}

// sweep deletes the requests that are done with at now.
func (c *Controller) sweep(ctx context.Context, log *slog.Logger, csrs []*certificatesv1.CertificateSigningRequest, now time.Time) {
	for _, csr := range csrs {
		done, why := Expired(csr, now)
		if !done {
			continue
		}
		uid := csr.UID
		err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			log.Warn("deleting certificate signing request", "csr", csr.Name, "err", err)
			continue
		}
		log.Info("deleted certificate signing request", "csr", csr.Name, "reason", why)
	}
}
