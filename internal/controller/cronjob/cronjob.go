package cronjob

import (
	"context"
	"log/slog"
	"reflect"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"plainkube.dev/plainkube/internal/controller"
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
	controller.Base
	// Clock is the controller's time: when schedules are due, and the
	// delays before looking at a CronJob again. Defaults to the real
	// clock; a fake one lets tests step through schedules.
	Clock clock.WithDelayedExecution
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
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	l := &loop{client: c.Client, clock: clk, queue: reconcile.NewClockQueue("cronjob", clk)}
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger, Queue: l.queue})
	l.log = b.Logger()
	cjInf := b.Informers().Batch().V1().CronJobs()
	jobInf := b.Informers().Batch().V1().Jobs()
	l.cronJobs, l.jobs = cjInf.Lister(), jobInf.Lister()
	b.Watches(cjInf.Informer(), controller.Added|controller.Deleted, func(_, obj any) []string { return l.keyOf(obj) }).
		Watches(cjInf.Informer(), controller.Updated, l.updateCronJob).
		Watches(jobInf.Informer(), controller.AllEvents, l.jobEvent)
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		l.rec = rec
		return l.sync
	})
}

func key(namespace, name string) string { return namespace + "/" + name }

func (l *loop) keyOf(obj any) []string {
	if cj, ok := obj.(*batchv1.CronJob); ok {
		return []string{key(cj.Namespace, cj.Name)}
	}
	return nil
}

// updateCronJob looks at a CronJob whose schedule or time zone changed at
// its next schedule time (a sooner one than the queue holds wins), and at
// any other changed CronJob at once.
func (l *loop) updateCronJob(oldObj, curObj any) []string {
	old, ok1 := oldObj.(*batchv1.CronJob)
	cur, ok2 := curObj.(*batchv1.CronJob)
	if !ok1 || !ok2 {
		return nil
	}
	if old.Spec.Schedule == cur.Spec.Schedule && reflect.DeepEqual(old.Spec.TimeZone, cur.Spec.TimeZone) {
		return l.keyOf(cur)
	}
	spec, _ := scheduleSpec(cur)
	sched, err := ParseSchedule(spec)
	if err != nil {
		l.log.Info("unparseable schedule", "namespace", cur.Namespace, "name", cur.Name, "schedule", cur.Spec.Schedule, "err", err)
		l.rec.Eventf(cur, corev1.EventTypeWarning, "UnParseableCronJobSchedule", "unparseable schedule for cronjob: %s", cur.Spec.Schedule)
		return nil
	}
	l.queue.AddAfter(key(cur.Namespace, cur.Name), nextRequeue(cur, l.clock.Now(), sched))
	return nil
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

func (l *loop) ownerOf(j *batchv1.Job) []string {
	if ref := metav1.GetControllerOf(j); ref != nil {
		if cj := l.resolveControllerRef(j.Namespace, ref); cj != nil {
			return l.keyOf(cj)
		}
	}
	return nil
}

// jobEvent looks at a Job's CronJob (on a change of controller, the old
// one's too).
func (l *loop) jobEvent(oldObj, curObj any) []string {
	cur, ok := curObj.(*batchv1.Job)
	if !ok {
		return nil
	}
	old, ok := oldObj.(*batchv1.Job)
	if !ok {
		return l.ownerOf(cur) // added or deleted
	}
	if old.ResourceVersion == cur.ResourceVersion {
		return nil
	}
	var keys []string
	if oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur); oldRef != nil && !reflect.DeepEqual(oldRef, curRef) {
		keys = l.ownerOf(old)
	}
	return append(keys, l.ownerOf(cur)...)
}
