package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
	// ServiceAccounts are the names ensured in every active namespace
	// (default: just "default"); set before Run.
	ServiceAccounts []string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Informers, when set, is the process's shared informer factory: the
	// controller's informers list and watch with its client (see
	// controller.Config.Shared).
	Informers *reconcile.SharedInformers

	client kubernetes.Interface
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{ServiceAccounts: []string{DefaultServiceAccountName}, client: cs}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

// Missing returns the names in want that a namespace lacks (has reports
// whether it has a ServiceAccount of that name); none for a namespace that
// is not active.
func Missing(ns *corev1.Namespace, want []string, has func(name string) bool) []string {
	if ns == nil || ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
		return nil
	}
	var out []string
	for _, name := range want {
		if !has(name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// Run watches Namespaces and ServiceAccounts and creates the missing ones
// with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Name, Client: c.client, Logger: c.Logger, Shared: c.Informers})
	nsInf := b.Informers().Core().V1().Namespaces()
	saInf := b.Informers().Core().V1().ServiceAccounts()
	nsLister, saLister := nsInf.Lister(), saInf.Lister()
	b.For(nsInf.Informer(), corev1.SchemeGroupVersion.WithKind("Namespace")).
		Watches(saInf.Informer(), controller.Deleted, controller.ToNamespace(func(sa metav1.Object) bool {
			return slices.Contains(c.ServiceAccounts, sa.GetName())
		}))
	log := b.Logger()
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, name string) (reconcile.Result, error) {
			ns, err := nsLister.Get(name)
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			if err != nil {
				return reconcile.Result{}, err
			}
			missing := Missing(ns, c.ServiceAccounts, func(sa string) bool {
				_, err := saLister.ServiceAccounts(name).Get(sa)
				return err == nil
			})
			return c.create(ctx, log, name, missing)
		}
	})
}

// create writes the missing ServiceAccounts of namespace name.
func (c *Controller) create(ctx context.Context, log *slog.Logger, name string, missing []string) (reconcile.Result, error) {
	for _, sa := range missing {
		_, err := c.client.CoreV1().ServiceAccounts(name).Create(ctx,
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
