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
	controller.Base
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
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base, triggers: endpointutil.NewTriggerTimeTracker(), stale: map[string]string{}}, nil
}

type listers struct {
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
}

// Run watches Services, Pods and Endpoints and keeps the Endpoints object
// of every Service with a selector in step, with workers workers, until
// ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, QueueName: "endpoint", Component: Name, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
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
		return controller.Shape[State, Plan]{
			Observe: func(key string) (State, bool, error) { return c.observe(l, key) },
			Plan:    plan,
			Apply: func(ctx context.Context, st State, p Plan) (reconcile.Result, error) {
				return c.apply(ctx, log, st, p)
			},
			Log: log,
		}.Reconcile
	})
}

// observe reads the Service named by key, its pods and its Endpoints
// object from the caches, and updates the change-trigger tracker.
func (c *Controller) observe(l listers, key string) (State, bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return State{}, false, nil
	}
	st := State{Namespace: ns, Name: name}
	svc, err := l.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.triggers.Forget(ns, name)
		c.forgetStale(key)
		return st, true, nil
	}
	if err != nil {
		return State{}, false, err
	}
	st.Service = svc
	if !selectsPods(svc) {
		return st, true, nil
	}
	if st.Pods, err = l.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector)); err != nil {
		return State{}, false, err
	}
	st.Current, err = l.endpoints.Endpoints(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		st.Current = nil
	case err != nil:
		return State{}, false, err
	case c.isStale(key, st.Current.ResourceVersion):
		st.Stale = true
		return st, true, nil
	}
	// Computed on every sync, so that the tracker follows even when
	// nothing is written.
	st.Trigger = c.triggers.Compute(svc, st.Pods)
	return st, true, nil
}

// apply deletes, writes or waits, as the plan says.
func (c *Controller) apply(ctx context.Context, log *slog.Logger, st State, p Plan) (reconcile.Result, error) {
	ns, name, key := st.Namespace, st.Name, st.Namespace+"/"+st.Name
	api := c.Client.CoreV1().Endpoints(ns)
	switch {
	case p.Delete:
		if err := api.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		log.Debug("endpoints of deleted service removed", "namespace", ns, "name", name)
		return reconcile.Result{}, nil
	case p.Wait:
		// The cache still shows what this controller replaced; wait for it.
		return reconcile.Result{Requeue: true}, nil
	case p.Write == nil:
		return reconcile.Result{}, nil
	case st.Current == nil:
		if _, err := api.Create(ctx, p.Write, metav1.CreateOptions{}); err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("creating endpoints %s: %w", key, err)
		}
	default:
		updated, err := api.Update(ctx, p.Write, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("updating endpoints %s: %w", key, err)
		}
		if updated.ResourceVersion != st.Current.ResourceVersion {
			c.markStale(key, st.Current.ResourceVersion)
		}
	}
	log.Debug("endpoints synced", "namespace", ns, "name", name, "subsets", len(p.Write.Subsets))
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
