package endpoints

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/controller/endpointutil"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "endpoints"

// leaderAnnotation marks Endpoints used as a leader-election lock, which
// have no Service and must not be removed.
const leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// Controller is the Endpoints controller.
type Controller struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Informers, when set, supplies the Pod informer, shared with the
	// process's other components (see reconcile.SharedInformers).
	Informers *reconcile.SharedInformers

	client   kubernetes.Interface
	triggers *endpointutil.TriggerTimeTracker
	// stale maps namespace/name to the resourceVersion of an Endpoints
	// object this controller replaced: seeing it again in the cache means
	// the cache is behind.
	staleMu sync.Mutex
	stale   map[string]string
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{client: cs, triggers: endpointutil.NewTriggerTimeTracker(), stale: map[string]string{}}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

type listers struct {
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
}

// Run watches Services, Pods and Endpoints and keeps the Endpoints object
// of every Service with a selector in step, with workers workers, until
// ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Name, Client: c.client, Logger: c.Logger, Shared: c.Informers})
	svcInf := b.Informers().Core().V1().Services()
	podInf := b.SharedInformers().Core().V1().Pods()
	epInf := b.Informers().Core().V1().Endpoints()
	l := listers{services: svcInf.Lister(), pods: podInf.Lister(), endpoints: epInf.Lister()}
	b.For(svcInf.Informer(), corev1.SchemeGroupVersion.WithKind("Service")).
		Watches(podInf.Informer(), controller.AllEvents, endpointutil.PodServices(l.services)).
		// An Endpoints object deleted by someone else is written again.
		Watches(epInf.Informer(), controller.Deleted, func(_, obj any) []string {
			if key, ok := controller.PrimaryKey(obj); ok {
				return []string{key}
			}
			return nil
		}).
		// Endpoints left behind by Services deleted while the controller
		// was not running are found once, at start (as upstream).
		OnSynced(func() {
			eps, err := l.endpoints.List(labels.Everything())
			if err != nil {
				return
			}
			for _, ep := range eps {
				if _, ok := ep.Annotations[leaderAnnotation]; !ok {
					b.Queue().Add(ep.Namespace + "/" + ep.Name)
				}
			}
		})
	log := b.Logger()
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, key string) (reconcile.Result, error) {
			return c.reconcile(ctx, log, l, key)
		}
	})
}

// reconcile makes the Endpoints object named by key match its Service's
// pods, or removes it if the Service is gone.
func (c *Controller) reconcile(ctx context.Context, log *slog.Logger, l listers, key string) (reconcile.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return reconcile.Result{}, nil
	}
	svc, err := l.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.triggers.Forget(ns, name)
		c.forgetStale(key)
		if _, err := l.endpoints.Endpoints(ns).Get(name); apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		if err := c.client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		log.Debug("endpoints of deleted service removed", "namespace", ns, "name", name)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	// Services without a selector get their Endpoints from elsewhere (the
	// API server for "kubernetes", or their users); ExternalName Services
	// have none.
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return reconcile.Result{}, nil
	}
	pods, err := l.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return reconcile.Result{}, err
	}
	current, err := l.endpoints.Endpoints(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return reconcile.Result{}, err
	case c.isStale(key, current.ResourceVersion):
		// The cache still shows what this controller replaced; wait for it.
		return reconcile.Result{Requeue: true}, nil
	}
	// Computed on every sync, so that the tracker follows even when
	// nothing is written.
	trigger := c.triggers.Compute(svc, pods)
	want, write := Desired(svc, pods, current, trigger)
	if !write {
		return reconcile.Result{}, nil
	}
	api := c.client.CoreV1().Endpoints(ns)
	if current == nil {
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("creating endpoints %s: %w", key, err)
		}
	} else {
		updated, err := api.Update(ctx, want, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("updating endpoints %s: %w", key, err)
		}
		if updated.ResourceVersion != current.ResourceVersion {
			c.markStale(key, current.ResourceVersion)
		}
	}
	log.Debug("endpoints synced", "namespace", ns, "name", name, "subsets", len(want.Subsets))
	return reconcile.Result{}, nil
}

func (c *Controller) isStale(key, rv string) bool {
	c.staleMu.Lock()
	defer c.staleMu.Unlock()
	return c.stale[key] == rv
}

func (c *Controller) markStale(key, rv string) {
	c.staleMu.Lock()
	defer c.staleMu.Unlock()
	c.stale[key] = rv
}

func (c *Controller) forgetStale(key string) {
	c.staleMu.Lock()
	defer c.staleMu.Unlock()
	delete(c.stale, key)
}
