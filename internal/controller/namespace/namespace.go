package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "namespace"

// Component is the controller's name as upstream's.
const Component = "namespace-controller"

// DefaultDeletionDelay is how long after a namespace event the namespace
// is looked at, as upstream: creates that passed admission just before the
// deletion have landed by then, so that the cleanup sees them.
const DefaultDeletionDelay = 5 * time.Second

// resyncPeriod is how often every namespace is looked at again.
const resyncPeriod = 5 * time.Minute

// Controller is the namespace controller.
type Controller struct {
	controller.Base
	// DeletionDelay is the wait before a namespace event is processed; set
	// before Run.
	DeletionDelay time.Duration

	del *deleter
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's clients from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{
		Base:          base,
		DeletionDelay: DefaultDeletionDelay,
		del: &deleter{client: base.Client, metadata: md, discovery: base.Client.Discovery(), now: time.Now,
			finalizerToken: corev1.FinalizerKubernetes, ops: newOpCache(), finalizerEstimate: finalizerEstimateSeconds,
			log: slog.Default().With("controller", "namespace")},
	}, nil
}

// Run watches namespaces and empties those being deleted with workers
// workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	// Retry at least every minute, never longer, as upstream.
	queue := reconcile.NewQueueWithRateLimiter(Name,
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 60*time.Second))
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger,
		Primary: &corev1.Namespace{}, Resync: resyncPeriod, Queue: queue, Shared: c.Informers})
	c.del.log = b.Logger()
	nsInf := b.Informers().Core().V1().Namespaces()
	lister := nsInf.Lister()
	b.Watches(nsInf.Informer(), controller.Added|controller.Updated, func(_, cur any) []string {
		// Looked at DeletionDelay later: creates racing the deletion land
		// first.
		if ns, ok := cur.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			queue.AddAfter(ns.Name, c.DeletionDelay)
		}
		return nil
	})
	// A pod gone from a namespace being emptied may be the last thing it
	// waited for: look again now rather than when its grace period would
	// have ended (but never before DeletionDelay has passed).
	b.Watches(b.SharedInformers().Core().V1().Pods().Informer(), controller.Deleted, func(_, cur any) []string {
		pod, ok := cur.(*corev1.Pod)
		if !ok {
			return nil
		}
		ns, err := lister.Get(pod.Namespace)
		if err != nil || ns.DeletionTimestamp == nil || time.Since(ns.DeletionTimestamp.Time) < c.DeletionDelay {
			return nil
		}
		return []string{ns.Name}
	})
	observe := func(name string) (State, bool, error) {
		if _, err := lister.Get(name); apierrors.IsNotFound(err) {
			return State{}, false, nil
		}
		// The namespace as it is now, not as the cache has it.
		ns, err := c.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return State{}, false, nil
		}
		if err != nil {
			return State{}, false, fmt.Errorf("deleting content of namespace %s: %w", name, err)
		}
		return State{Namespace: ns}, true, nil
	}
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return controller.Shape[State, Plan]{Observe: observe, Plan: plan, Apply: c.del.apply, Log: b.Logger()}.Reconcile
	})
}
