package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "serviceaccount"

// DefaultServiceAccountName is the ServiceAccount every namespace gets.
const DefaultServiceAccountName = "default"

// Controller is the service account controller.
type Controller struct {
	controller.Base
	// ServiceAccounts are the names ensured in every active namespace
	// (default: just "default"); set before Run.
	ServiceAccounts []string
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base, ServiceAccounts: []string{DefaultServiceAccountName}}, nil
}

// Run watches Namespaces and ServiceAccounts and creates the missing ones
// with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Name, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	nsInf := b.Informers().Core().V1().Namespaces()
	saInf := b.Informers().Core().V1().ServiceAccounts()
	nsLister, saLister := nsInf.Lister(), saInf.Lister()
	b.For(nsInf.Informer(), corev1.SchemeGroupVersion.WithKind("Namespace")).
		Watches(saInf.Informer(), controller.Deleted, controller.ToNamespace(func(sa metav1.Object) bool {
			return slices.Contains(c.ServiceAccounts, sa.GetName())
		}))
	log := b.Logger()
	observe := func(name string) (State, bool, error) {
		ns, err := nsLister.Get(name)
		if apierrors.IsNotFound(err) {
			return State{}, false, nil
		}
		if err != nil {
			return State{}, false, err
		}
		st := State{Namespace: ns, Want: c.ServiceAccounts}
		for _, sa := range c.ServiceAccounts {
			if _, err := saLister.ServiceAccounts(name).Get(sa); err == nil {
				st.Have = append(st.Have, sa)
			}
		}
		return st, true, nil
	}
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return controller.Shape[State, Plan]{Observe: observe, Plan: plan, Log: log,
			Apply: func(ctx context.Context, st State, p Plan) (reconcile.Result, error) {
				return c.create(ctx, log, st.Namespace.Name, p.Create)
			}}.Reconcile
	})
}

// create writes the missing ServiceAccounts of namespace name.
func (c *Controller) create(ctx context.Context, log *slog.Logger, name string, missing []string) (reconcile.Result, error) {
	for _, sa := range missing {
		_, err := c.Client.CoreV1().ServiceAccounts(name).Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		switch {
		case err == nil:
			log.Info("created service account", "namespace", name, "name", sa)
		case apierrors.IsAlreadyExists(err):
		case apierrors.IsNotFound(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			// The namespace went away or is going.
			return reconcile.Result{}, nil
		default:
			return reconcile.Result{}, fmt.Errorf("creating service account %s/%s: %w", name, sa, err)
		}
	}
	return reconcile.Result{}, nil
}
