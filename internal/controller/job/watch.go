package job

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/controller"
)

// What the Job controller does with informer events beyond the Builder's
// enqueueing: pod and status-only job events are batched (SyncBatchPeriod),
// pods seen created or deleted settle expectations, and pods whose
// tracking finalizer no job will remove go to the orphan queue.

func jobKey(j *batchv1.Job) string { return j.Namespace + "/" + j.Name }

// updateDelay: a spec change is looked at at once, a status-only update
// after the batch period.
func (l *loop) updateDelay(oldObj, curObj any) time.Duration {
	old, ok1 := oldObj.(*batchv1.Job)
	cur, ok2 := curObj.(*batchv1.Job)
	if ok1 && ok2 && old.Generation == cur.Generation {
		return l.batch
	}
	return 0
}

// jobChanged, for an update (old set) or a deletion (old nil): the pods
// of a finished or deleted job keep no finalizer, and a new or changed
// active deadline is looked at when it passes.
func (l *loop) jobChanged(oldObj, curObj any) []string {
	cur, ok := curObj.(*batchv1.Job)
	if !ok {
		return nil
	}
	old, _ := oldObj.(*batchv1.Job)
	if old == nil || isFinished(cur) {
		l.cleanupPodFinalizers(cur)
	}
	if old != nil && cur.Status.StartTime != nil && cur.Spec.ActiveDeadlineSeconds != nil &&
		(old.Spec.ActiveDeadlineSeconds == nil || *old.Spec.ActiveDeadlineSeconds != *cur.Spec.ActiveDeadlineSeconds) {
		total := time.Duration(*cur.Spec.ActiveDeadlineSeconds) * time.Second
		l.queue.AddAfter(jobKey(cur), total-l.clock.Since(cur.Status.StartTime.Time))
	}
	return nil
}

// cleanupPodFinalizers hands the job's pods that still carry the tracking
// finalizer to the orphan queue.
func (l *loop) cleanupPodFinalizers(j *batchv1.Job) {
	sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
	if err != nil {
		return
	}
	pods, _ := l.pods.Pods(j.Namespace).List(sel)
	for _, p := range pods {
		if metav1.IsControlledBy(p, j) && hasTrackingFinalizer(p) {
			l.orphans.Add(controller.ObjectKey(p))
		}
	}
}

// observed settles the expectations of the job (key) that controls a pod:
// a pod seen created; a pod being deleted or gone (unless the job has
// finished: then the orphan queue sees to it); a tracking finalizer seen
// removed.
func (l *loop) observed(key string, event controller.Event, _, cur metav1.Object) {
	p, ok := cur.(*corev1.Pod)
	if !ok {
		return
	}
	if event == controller.Deleted || p.DeletionTimestamp != nil {
		if j := l.owner(p.Namespace, metav1.GetControllerOfNoCopy(p)); j == nil || isFinished(j) {
			return
		}
		l.exp.DeletionObserved(key, controller.ObjectKey(p))
		if event == controller.Deleted || !hasTrackingFinalizer(p) {
			l.finExp.Observed(key, p.UID)
		}
		return
	}
	if event == controller.Added {
		l.exp.CreationObserved(key)
		return
	}
	if !hasTrackingFinalizer(p) {
		l.finExp.Observed(key, p.UID)
	}
}

// orphanedPod hands a pod whose tracking finalizer no job will remove to
// the orphan queue; gone: the pod was deleted.
func (l *loop) orphanedPod(gone bool) func(old, cur any) []string {
	return func(oldObj, curObj any) []string {
		p, ok := curObj.(*corev1.Pod)
		if !ok {
			return nil
		}
		if old, ok := oldObj.(*corev1.Pod); ok && old.ResourceVersion == p.ResourceVersion {
			return nil
		}
		var owner *batchv1.Job
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
			owner = l.owner(p.Namespace, ref)
		}
		if orphanedWithFinalizer(p, gone, owner) {
			l.orphans.Add(controller.ObjectKey(p))
		}
		return nil
	}
}
