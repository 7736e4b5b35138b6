package job

import (
	"reflect"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"plainkube.dev/plainkube/internal/reconcile"
)

func jobKey(j *batchv1.Job) string { return j.Namespace + "/" + j.Name }

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func podKeys(pods []*corev1.Pod) []string {
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = podKey(p)
	}
	return keys
}

// enqueueBatched looks at the job after the batch period (pod events,
// status-only updates).
func (l *loop) enqueueBatched(j *batchv1.Job) { l.queue.AddAfter(jobKey(j), l.batch) }

// enqueueNow looks at the job at once (creation, deletion, spec change).
func (l *loop) enqueueNow(j *batchv1.Job) { l.queue.Add(jobKey(j)) }

// enqueueAfter looks at the job after d, but not before the batch period.
func (l *loop) enqueueAfter(key string, d time.Duration) { l.queue.AddAfter(key, max(d, l.batch)) }

func asJob(obj any) *batchv1.Job {
	j, _ := reconcile.DeletedObject[*batchv1.Job](obj)
	return j
}

func asPod(obj any) *corev1.Pod {
	p, _ := reconcile.DeletedObject[*corev1.Pod](obj)
	return p
}

func (l *loop) addJob(obj any) {
	if j := asJob(obj); j != nil {
		l.enqueueNow(j)
	}
}

func (l *loop) updateJob(oldObj, curObj any) {
	old, cur := asJob(oldObj), asJob(curObj)
	if old == nil || cur == nil {
		return
	}
	if cur.Generation == old.Generation {
		l.enqueueBatched(cur)
	} else {
		l.enqueueNow(cur)
	}
	if isFinished(cur) {
		// Backstop: the pods of a finished job keep no finalizer.
		l.cleanupPodFinalizers(cur)
	}
	// A new or changed deadline: look again when it passes.
	if cur.Status.StartTime != nil && cur.Spec.ActiveDeadlineSeconds != nil &&
		(old.Spec.ActiveDeadlineSeconds == nil || *old.Spec.ActiveDeadlineSeconds != *cur.Spec.ActiveDeadlineSeconds) {
		total := time.Duration(*cur.Spec.ActiveDeadlineSeconds) * time.Second
		l.queue.AddAfter(jobKey(cur), total-l.clock.Since(cur.Status.StartTime.Time))
	}
}

func (l *loop) deleteJob(obj any) {
	j := asJob(obj)
	if j == nil {
		return
	}
	l.enqueueNow(j)
	l.cleanupPodFinalizers(j)
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
			l.orphans.Add(podKey(p))
		}
	}
}

// resolveControllerRef is the job ref names, if it still exists as the
// same object.
func (l *loop) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	j, err := l.jobs.Jobs(namespace).Get(ref.Name)
	if err != nil || j.UID != ref.UID {
		return nil
	}
	return j
}

// jobsForPod are the jobs whose selector matches an orphan pod.
func (l *loop) jobsForPod(p *corev1.Pod) []*batchv1.Job {
	if len(p.Labels) == 0 {
		return nil
	}
	all, err := l.jobs.Jobs(p.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*batchv1.Job
	for _, j := range all {
		sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		out = append(out, j)
	}
	return out
}

func (l *loop) addPod(obj any) {
	p := asPod(obj)
	if p == nil {
		return
	}
	if p.DeletionTimestamp != nil {
		// Seen first while being deleted (after a relist): a deletion.
		l.deletePod(p, false)
		return
	}
	if ref := metav1.GetControllerOf(p); ref != nil {
		if j := l.resolveControllerRef(p.Namespace, ref); j != nil {
			l.exp.CreationObserved(jobKey(j))
			l.enqueueBatched(j)
		}
		return
	}
	if hasTrackingFinalizer(p) {
		l.orphans.Add(podKey(p))
	}
	for _, j := range l.jobsForPod(p) {
		l.enqueueBatched(j)
	}
}

func (l *loop) updatePod(oldObj, curObj any) {
	old, cur := asPod(oldObj), asPod(curObj)
	if old == nil || cur == nil || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		// A graceful deletion started: replace the pod now rather than
		// when it is finally removed.
		l.deletePod(cur, false)
		return
	}
	finalizerGone := !hasTrackingFinalizer(cur)
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if j := l.resolveControllerRef(old.Namespace, oldRef); j != nil {
			if finalizerGone {
				l.finExp.removalObserved(jobKey(j), cur.UID)
			}
			l.enqueueBatched(j)
		}
	}
	if curRef != nil {
		if j := l.resolveControllerRef(cur.Namespace, curRef); j != nil {
			if finalizerGone {
				l.finExp.removalObserved(jobKey(j), cur.UID)
			}
			l.enqueueBatched(j)
		}
		return
	}
	if hasTrackingFinalizer(cur) {
		l.orphans.Add(podKey(cur))
	}
	if refChanged || !reflect.DeepEqual(cur.Labels, old.Labels) {
		for _, j := range l.jobsForPod(cur) {
			l.enqueueBatched(j)
		}
	}
}

// deletePod handles a pod's deletion starting (final false) or the pod
// being removed (final true).
func (l *loop) deletePod(obj any, final bool) {
	p := asPod(obj)
	if p == nil {
		return
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		if hasTrackingFinalizer(p) {
			l.orphans.Add(podKey(p))
		}
		return
	}
	j := l.resolveControllerRef(p.Namespace, ref)
	if j == nil || isFinished(j) {
		// The job will not take the finalizer off.
		if hasTrackingFinalizer(p) {
			l.orphans.Add(podKey(p))
		}
		return
	}
	key := jobKey(j)
	l.exp.DeletionObserved(key, podKey(p))
	if final || !hasTrackingFinalizer(p) {
		l.finExp.removalObserved(key, p.UID)
	}
	l.enqueueBatched(j)
}
