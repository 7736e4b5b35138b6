package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

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
	log := c.Logger
	if log == nil {
		log = slog.Default().With("controller", Name)
	}
	queue := reconcile.NewQueue[string](Name)
	factory := informers.NewSharedInformerFactory(c.client, 0)
	nsInformer := factory.Core().V1().Namespaces()
	saInformer := factory.Core().V1().ServiceAccounts()
	enqueueNamespace := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok {
			queue.Add(ns.Name)
		}
	}
	if _, err := nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueNamespace,
		UpdateFunc: func(_, obj any) { enqueueNamespace(obj) },
	}); err != nil {
		return err
	}
	if _, err := saInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if sa, ok := reconcile.DeletedObject[*corev1.ServiceAccount](obj); ok && slices.Contains(c.ServiceAccounts, sa.Name) {
				queue.Add(sa.Namespace)
			}
		},
	}); err != nil {
		return err
	}
	nsLister, saLister := nsInformer.Lister(), saInformer.Lister()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, "serviceaccount informers", nsInformer.Informer().HasSynced, saInformer.Informer().HasSynced); !ok {
		queue.ShutDown()
		return err
	}
	log.Info("serviceaccount controller synced")
	reconcile.ProcessQueue(ctx, queue, workers, log, func(ctx context.Context, name string) (reconcile.Result, error) {
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
	})
	return nil
}
