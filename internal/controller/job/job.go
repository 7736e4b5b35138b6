package job

import (
	"context"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "job"

// Component is the source of the controller's events, as upstream's.
const Component = "job-controller"

// DefaultSyncBatchPeriod is how long pod events and status-only job
// updates wait before the job is synced, so that a burst of them makes
// one sync (upstream's syncJobBatchPeriod).
const DefaultSyncBatchPeriod = time.Second

// resyncPeriod is how often every job is looked at again.
const resyncPeriod = 10 * time.Minute

var controllerKind = batchv1.SchemeGroupVersion.WithKind("Job")

// Controller is the Job controller (and the TTL-after-finished
// controller). Set its exported fields before Run.
type Controller struct {
	controller.Base
	// Clock is the controller's time: status timestamps, deadlines, pod
	// failure backoff, TTLs and the delays before looking at a job again.
	// Defaults to the real clock.
	Clock clock.WithDelayedExecution
	// PodFailureBackoff and MaxPodFailureBackoff set the pod failure
	// backoff (default DefaultPodFailureBackoff and DefaultMaxPodFailureBackoff).
	PodFailureBackoff, MaxPodFailureBackoff time.Duration
	// SyncBatchPeriod defaults to DefaultSyncBatchPeriod.
	SyncBatchPeriod time.Duration
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

// loop is one run of the controller: its caches, queues and bookkeeping.
type loop struct {
	client  kubernetes.Interface
	jobs    batchlisters.JobLister
	pods    corelisters.PodLister
	queue   *reconcile.ClockQueue
	orphans workqueue.TypedRateLimitingInterface[string]
	rec     record.EventRecorder
	log     *slog.Logger
	clock   clock.WithDelayedExecution
	// owner is the job a controller reference names, if it is in the
	// cache with the reference's UID.
	owner func(namespace string, ref *metav1.OwnerReference) *batchv1.Job

	exp     *controller.Expectations
	finExp  *controller.UIDExpectations
	backoff *backoffStore

	backoffBase, backoffMax time.Duration
	batch                   time.Duration
}

// Run watches Jobs and Pods and syncs jobs with workers workers (and
// removes the tracking finalizer from orphaned pods) until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	queue := reconcile.NewClockQueue(Name, clk)
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger,
		Primary: &batchv1.Job{}, Resync: resyncPeriod, Shared: c.Informers, Queue: queue})
	jobInf := b.Informers().Batch().V1().Jobs()
	podInf := b.SharedInformers().Core().V1().Pods()
	l := &loop{client: c.Client, log: b.Logger(), clock: clk, queue: queue,
		jobs: jobInf.Lister(), pods: podInf.Lister(),
		orphans:     reconcile.NewQueue[string]("job_orphan_pod"),
		exp:         controller.NewExpectations(clk.Now),
		finExp:      controller.NewUIDExpectations(),
		backoff:     newBackoffStore(),
		backoffBase: orDefault(c.PodFailureBackoff, DefaultPodFailureBackoff),
		backoffMax:  orDefault(c.MaxPodFailureBackoff, DefaultMaxPodFailureBackoff),
		batch:       orDefault(c.SyncBatchPeriod, DefaultSyncBatchPeriod),
	}
	l.owner = func(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
		o, _ := b.Owner(namespace, ref)
		j, _ := o.(*batchv1.Job)
		return j
	}
	b.For(jobInf.Informer(), controllerKind).
		DelayUpdates(l.updateDelay).
		Watches(jobInf.Informer(), controller.Updated|controller.Deleted, l.jobChanged).
		Owns(podInf.Informer(), controller.OwnOptions{
			OrphanSelector: func(o metav1.Object) labels.Selector {
				if j, ok := o.(*batchv1.Job); ok {
					return controller.LabelSelector(j.Spec.Selector)
				}
				return nil
			},
			Observed: l.observed,
			Delay:    l.batch,
		}).
		Watches(podInf.Informer(), controller.Added|controller.Updated, l.orphanedPod(false)).
		Watches(podInf.Informer(), controller.Deleted, l.orphanedPod(true)).
		Process(l.orphans, 1, l.syncOrphanPod)
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		l.rec = rec
		return controller.Shape[State, Plan]{Observe: l.observe, Plan: plan, Apply: l.apply, Log: l.log}.Reconcile
	})
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
