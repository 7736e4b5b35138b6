package job

import (
	"context"
	"log/slog"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/controller/events"
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
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Clock is the controller's time: status timestamps, deadlines, pod
	// failure backoff, TTLs and the delays before looking at a job again.
	// Defaults to the real clock.
	Clock clock.WithDelayedExecution
	// PodFailureBackoff and MaxPodFailureBackoff set the pod failure
	// backoff (default DefaultPodFailureBackoff and DefaultMaxPodFailureBackoff).
	PodFailureBackoff, MaxPodFailureBackoff time.Duration
	// SyncBatchPeriod defaults to DefaultSyncBatchPeriod.
	SyncBatchPeriod time.Duration
	// Informers, when set, supplies the Pod informer, shared with the
	// process's other components (see reconcile.SharedInformers).
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
	return &Controller{client: cs}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

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

	exp     *controller.Expectations
	finExp  *finalizerExpectations
	backoff *backoffStore

	backoffBase, backoffMax time.Duration
	batch                   time.Duration
}

// Run watches Jobs and Pods and syncs jobs with workers workers (and
// removes the tracking finalizer from orphaned pods) until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	log := c.Logger
	if log == nil {
		log = slog.Default().With("controller", Name)
	}
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	l := &loop{client: c.client, log: log, clock: clk,
		queue:       reconcile.NewClockQueue("job", clk),
		orphans:     reconcile.NewQueue[string]("job_orphan_pod"),
		exp:         controller.NewExpectations(clk.Now),
		finExp:      newFinalizerExpectations(),
		backoff:     newBackoffStore(),
		backoffBase: orDefault(c.PodFailureBackoff, DefaultPodFailureBackoff),
		backoffMax:  orDefault(c.MaxPodFailureBackoff, DefaultMaxPodFailureBackoff),
		batch:       orDefault(c.SyncBatchPeriod, DefaultSyncBatchPeriod),
	}
	rec, stop := events.NewRecorder(ctx, c.client, Component, log)
	defer stop()
	l.rec = rec

	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithCustomResyncConfig(
		map[metav1.Object]time.Duration{&batchv1.Job{}: resyncPeriod}))
	jobInf := factory.Batch().V1().Jobs()
	sharedFactory := reconcile.SharedOr(c.Informers, factory)
	podInf := sharedFactory.Core().V1().Pods()
	l.jobs, l.pods = jobInf.Lister(), podInf.Lister()
	if _, err := jobInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: l.addJob, UpdateFunc: l.updateJob, DeleteFunc: l.deleteJob,
	}); err != nil {
		return err
	}
	removePodHandler, err := reconcile.AddHandler(podInf.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: l.addPod, UpdateFunc: l.updatePod, DeleteFunc: func(obj any) { l.deletePod(obj, true) },
	})
	if err != nil {
		return err
	}
	defer removePodHandler()
	factory.Start(ctx.Done())
	sharedFactory.Start(ctx.Done())
	defer factory.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, "job informers", jobInf.Informer().HasSynced, podInf.Informer().HasSynced); !ok {
		l.queue.ShutDown()
		l.orphans.ShutDown()
		return err
	}
	log.Info("job controller synced")
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		reconcile.ProcessQueue(ctx, l.orphans, 1, log, l.syncOrphanPod)
	}()
	go func() {
		defer wg.Done()
		reconcile.ProcessQueue[string](ctx, l.queue, workers, log, l.sync)
	}()
	wg.Wait()
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
