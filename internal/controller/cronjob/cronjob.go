package cronjob

import (
	"context"
	"log/slog"
	"reflect"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"plainkube.dev/plainkube/internal/controller/events"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "cronjob"

// Component is the source of the controller's events, as upstream's.
const Component = "cronjob-controller"

var controllerKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller is the CronJob controller. Set its exported fields before
// Run.
type Controller struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Clock is the controller's time: when schedules are due, and the
	// delays before looking at a CronJob again. Defaults to the real
	// clock; a fake one lets tests step through schedules.
	Clock clock.WithDelayedExecution

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

// loop is one run of the controller.
type loop struct {
	client   kubernetes.Interface
	cronJobs batchlisters.CronJobLister
	jobs     batchlisters.JobLister
	queue    *reconcile.ClockQueue
	rec      record.EventRecorder
	log      *slog.Logger
	clock    clock.WithDelayedExecution
}

// Run watches CronJobs and Jobs and syncs CronJobs with workers workers
// until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	log := c.Logger
	if log == nil {
		log = slog.Default().With("controller", Name)
	}
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	l := &loop{client: c.client, log: log, clock: clk, queue: reconcile.NewClockQueue("cronjob", clk)}
	rec, stop := events.NewRecorder(ctx, c.client, Component, log)
	defer stop()
	l.rec = rec

	factory := informers.NewSharedInformerFactory(c.client, 0)
	cjInf := factory.Batch().V1().CronJobs()
	jobInf := factory.Batch().V1().Jobs()
	l.cronJobs, l.jobs = cjInf.Lister(), jobInf.Lister()
	if _, err := cjInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    l.enqueue,
		UpdateFunc: l.updateCronJob,
		DeleteFunc: l.enqueue,
	}); err != nil {
		return err
	}
	if _, err := jobInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: l.addJob, UpdateFunc: l.updateJob, DeleteFunc: l.deleteJob,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, "cronjob informers", cjInf.Informer().HasSynced, jobInf.Informer().HasSynced); !ok {
		l.queue.ShutDown()
		return err
	}
	log.Info("cronjob controller synced")
	reconcile.ProcessQueue[string](ctx, l.queue, workers, log, l.sync)
	return nil
}

func key(namespace, name string) string { return namespace + "/" + name }

func asCronJob(obj any) *batchv1.CronJob {
	cj, _ := reconcile.DeletedObject[*batchv1.CronJob](obj)
	return cj
}

func asJob(obj any) *batchv1.Job {
	j, _ := reconcile.DeletedObject[*batchv1.Job](obj)
	return j
}

func (l *loop) enqueue(obj any) {
	if cj := asCronJob(obj); cj != nil {
		l.queue.Add(key(cj.Namespace, cj.Name))
	}
}

// updateCronJob looks at a CronJob whose schedule or time zone changed at
// its next schedule time (a sooner one than the queue holds wins), and at
// any other changed CronJob at once.
func (l *loop) updateCronJob(oldObj, curObj any) {
	old, cur := asCronJob(oldObj), asCronJob(curObj)
	if old == nil || cur == nil {
		return
	}
	if old.Spec.Schedule == cur.Spec.Schedule && reflect.DeepEqual(old.Spec.TimeZone, cur.Spec.TimeZone) {
		l.enqueue(cur)
		return
	}
	spec, _ := scheduleSpec(cur)
	sched, err := ParseSchedule(spec)
	if err != nil {
		l.log.Info("unparseable schedule", "namespace", cur.Namespace, "name", cur.Name, "schedule", cur.Spec.Schedule, "err", err)
		l.rec.Eventf(cur, corev1.EventTypeWarning, "UnParseableCronJobSchedule", "unparseable schedule for cronjob: %s", cur.Spec.Schedule)
		return
	}
	l.queue.AddAfter(key(cur.Namespace, cur.Name), nextRequeue(cur, l.clock.Now(), sched))
}

// resolveControllerRef is the CronJob ref names, if it still exists as the
// same object.
func (l *loop) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.CronJob {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	cj, err := l.cronJobs.CronJobs(namespace).Get(ref.Name)
	if err != nil || cj.UID != ref.UID {
		return nil
	}
	return cj
}

func (l *loop) enqueueOwner(j *batchv1.Job) {
	if ref := metav1.GetControllerOf(j); ref != nil {
		if cj := l.resolveControllerRef(j.Namespace, ref); cj != nil {
			l.enqueue(cj)
		}
	}
}

func (l *loop) addJob(obj any) {
	j := asJob(obj)
	if j == nil {
		return
	}
	l.enqueueOwner(j)
}

func (l *loop) updateJob(oldObj, curObj any) {
	old, cur := asJob(oldObj), asJob(curObj)
	if old == nil || cur == nil || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur); oldRef != nil && !reflect.DeepEqual(oldRef, curRef) {
		l.enqueueOwner(old)
	}
	l.enqueueOwner(cur)
}

func (l *loop) deleteJob(obj any) {
	if j := asJob(obj); j != nil {
		l.enqueueOwner(j)
	}
}
