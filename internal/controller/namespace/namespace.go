package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "namespace"

// DefaultDeletionDelay is how long after a namespace event the namespace
// is looked at, as upstream: creates that passed admission just before the
// deletion have landed by then, so that the cleanup sees them.
const DefaultDeletionDelay = 5 * time.Second

// resyncPeriod is how often every namespace is looked at again.
const resyncPeriod = 5 * time.Minute

// Controller is the namespace controller.
type Controller struct {
	// DeletionDelay is the wait before a namespace event is processed; set
	// before Run.
	DeletionDelay time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	client kubernetes.Interface
	del    *deleter
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's clients from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{
		DeletionDelay: DefaultDeletionDelay,
		client:        cs,
		del: &deleter{client: cs, metadata: md, discovery: dc, now: time.Now,
			finalizerToken: corev1.FinalizerKubernetes, ops: newOpCache(), finalizerEstimate: finalizerEstimateSeconds,
			log: slog.Default()},
	}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

// Run watches namespaces and empties those being deleted with workers
// workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	log := c.Logger
	if log == nil {
		log = slog.Default().With("controller", Name)
	}
	c.del.log = log
	// Retry at least every minute, never longer, as upstream.
	queue := reconcile.NewQueueWithRateLimiter("namespace",
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 60*time.Second))
	factory := informers.NewSharedInformerFactory(c.client, 0)
	nsInformer := factory.Core().V1().Namespaces()
	enqueue := func(obj any) {
		ns, ok := obj.(*corev1.Namespace)
		if !ok || ns.DeletionTimestamp == nil {
			return
		}
		queue.AddAfter(ns.Name, c.DeletionDelay)
	}
	if _, err := nsInformer.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}, resyncPeriod); err != nil {
		return err
	}
	lister := nsInformer.Lister()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, "namespace informer", nsInformer.Informer().HasSynced); !ok {
		queue.ShutDown()
		return err
	}
	log.Info("namespace controller synced")
	reconcile.ProcessQueue(ctx, queue, workers, log, func(ctx context.Context, name string) (reconcile.Result, error) {
		if _, err := lister.Get(name); apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		started := time.Now()
		err := c.del.Delete(ctx, name)
		var remaining *ResourcesRemainingError
		if errors.As(err, &remaining) {
			wait := time.Duration(remaining.Estimate/2+1) * time.Second
			log.Info("content remaining in namespace", "namespace", name, "waitSeconds", wait.Seconds())
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("deleting content of namespace %s: %w", name, err)
		}
		log.Debug("namespace synced", "namespace", name, "took", time.Since(started))
		return reconcile.Result{}, nil
	})
	return nil
}
