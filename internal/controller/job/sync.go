package job

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/controller"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/reconcile"
)

// managedElsewhere: spec.managedBy names another controller.
func managedElsewhere(j *batchv1.Job) bool {
	return j.Spec.ManagedBy != nil && *j.Spec.ManagedBy != batchv1.JobControllerName
}

// sync syncs the job named by key. A status write that lost a race (the
// cache was behind) is retried with backoff without being reported.
func (l *loop) sync(ctx context.Context, key string) (reconcile.Result, error) {
	err := l.syncJob(ctx, key)
	if apierrors.IsConflict(err) {
		l.log.Debug("conflict; will retry", "key", key, "err", err)
		return reconcile.Result{Requeue: true}, nil
	}
	return reconcile.Result{}, err
}

func (l *loop) syncJob(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	shared, err := l.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		l.exp.Forget(key)
		l.finExp.forget(key)
		l.backoff.remove(key)
		return nil
	}
	if err != nil {
		return err
	}
	if isFinished(shared) {
		l.backoff.remove(key)
		return l.syncTTL(ctx, key, shared)
	}
	if managedElsewhere(shared) {
		return nil
	}
	if m := shared.Spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		l.rec.Event(shared, corev1.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown")
		return nil
	}
	if isIndexed(shared) && shared.Spec.Completions == nil {
		return nil // invalid; the API server does not accept it
	}
	if sel := shared.Spec.Selector; sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		// It would claim no pod (or every pod): never create any.
		l.log.Error("job has no selector; not syncing", "namespace", ns, "name", name)
		return nil
	}
	job := shared.DeepCopy()
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	// Check expectations before listing pods: a pod created after the
	// check makes the next sync wait, never this one double-create.
	satisfied := l.exp.Satisfied(key)
	pods, err := l.podsForJob(ctx, job)
	if err != nil {
		return err
	}
	now := l.clock.Now()
	st := newSyncState(job, pods, l.finExp.expected(key))
	if job.Status.StartTime == nil && !isSuspended(job) {
		t := metav1.NewTime(now)
		job.Status.StartTime = &t
	}
	backoff := nextBackoff(l.backoff.get(key), st.newSucceeded, st.newFailed)
	if d := st.decideFinished(now); d > 0 {
		l.log.Debug("job has an active deadline; will look again", "namespace", ns, "name", name, "in", d)
		l.queue.AddAfter(key, d)
	}

	var manageErr error
	suspendChanged := false
	if st.finished != nil {
		// Stop what still runs; the pods keep their finalizer and are
		// counted as failures (unless the job succeeded).
		ready, deleted, err := l.deleteActivePods(ctx, job, st.activePods)
		if deleted != len(st.activePods) || !satisfied {
			// Pods may remain, or be missing from the cache: not yet.
			st.finished = nil
		}
		st.active -= int32(deleted)
		st.terminating += int32(deleted)
		st.ready -= ready
		manageErr = err
	} else {
		managed := false
		if satisfied && job.DeletionTimestamp == nil {
			manageErr = l.manage(ctx, key, st, backoff, now)
			managed = true
		}
		if isComplete(job, st.succeeded, st.active) {
			st.finished = successCondition(now)
		} else if managed {
			if suspendChanged = st.updateSuspended(now); suspendChanged {
				if isSuspended(job) {
					l.rec.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
				} else {
					l.rec.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
				}
			}
		}
	}
	needsFlush := suspendChanged || st.active != job.Status.Active ||
		!int32PtrEqual(job.Status.Ready, st.ready) || !int32PtrEqual(job.Status.Terminating, st.terminating) ||
		!startTimeEqual(shared.Status.StartTime, job.Status.StartTime)
	job.Status.Active = st.active
	job.Status.Ready = &st.ready
	job.Status.Terminating = &st.terminating
	if err := l.trackStatus(ctx, key, st, backoff, needsFlush); err != nil {
		return fmt.Errorf("tracking status: %w", err)
	}
	return manageErr
}

func int32PtrEqual(p *int32, v int32) bool { return p != nil && *p == v }

func startTimeEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

// manage carries out planManage: deletes, backoff, or creates.
func (l *loop) manage(ctx context.Context, key string, st *syncState, backoff backoffRecord, now time.Time) error {
	plan := st.planManage(backoff.remaining(now, l.backoffBase, l.backoffMax))
	switch {
	case len(plan.delete) > 0:
		l.exp.ExpectDeletions(key, podKeys(plan.delete))
		ready, removed, err := l.deleteJobPods(ctx, st.job, key, plan.delete)
		st.active -= int32(removed)
		st.terminating += int32(removed)
		st.ready -= ready
		return err
	case plan.wait > 0:
		l.log.Debug("pod failure backoff; will create pods later", "namespace", st.job.Namespace, "name", st.job.Name, "in", plan.wait)
		l.enqueueAfter(key, plan.wait)
		return nil
	case plan.create > 0:
		created, err := l.createPods(ctx, st.job, key, plan)
		st.active += int32(created)
		return err
	}
	return nil
}

// createPods creates plan.create pods in slow-start batches.
func (l *loop) createPods(ctx context.Context, job *batchv1.Job, key string, plan managePlan) (int, error) {
	l.exp.ExpectCreations(key, plan.create)
	t := podTemplate(job)
	succeeded, skipped, err := controller.SlowStart(plan.create, func(i int) error {
		index := unknownIndex
		if plan.indexes != nil {
			index = plan.indexes[i]
		}
		pod, err := newPod(job, t, index)
		if err == nil {
			var created *corev1.Pod
			created, err = l.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
			if err == nil {
				l.log.Debug("created pod", "namespace", job.Namespace, "name", job.Name, "pod", created.Name)
				l.rec.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
				return nil
			}
		}
		// The informer will not show this pod.
		l.exp.CreationObserved(key)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil // every create would fail; nothing to report
		}
		l.rec.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return err
	})
	for range skipped {
		l.exp.CreationObserved(key)
	}
	return succeeded, err
}

// deleteJobPods takes the tracking finalizer off each pod (so it is not
// counted as a failure) and deletes it. It returns how many ready pods and
// how many pods in all it deleted.
func (l *loop) deleteJobPods(ctx context.Context, job *batchv1.Job, key string, pods []*corev1.Pod) (int32, int, error) {
	var ready atomic.Int32
	var removed atomic.Int32
	errs := make(chan error, len(pods))
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.removeFinalizer(ctx, p)
			if err == nil {
				err = l.deletePodAPI(ctx, job, p)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				// Its deletion will not be seen.
				l.exp.DeletionObserved(key, podKey(p))
				errs <- err
				return
			}
			if err != nil {
				l.exp.DeletionObserved(key, podKey(p))
			}
			removed.Add(1)
			if podutil.IsReady(p) {
				ready.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return ready.Load(), int(removed.Load()), utilerrors.NewAggregate(all)
}

// deleteActivePods deletes the pods of a finishing job, keeping their
// finalizers: trackStatus counts them, then lets them go.
func (l *loop) deleteActivePods(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) (int32, int, error) {
	var ready atomic.Int32
	var removed atomic.Int32
	errs := make(chan error, len(pods))
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.deletePodAPI(ctx, job, p); err != nil && !apierrors.IsNotFound(err) {
				errs <- err
				return
			}
			removed.Add(1)
			if podutil.IsReady(p) {
				ready.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return ready.Load(), int(removed.Load()), utilerrors.NewAggregate(all)
}

func (l *loop) deletePodAPI(ctx context.Context, job *batchv1.Job, p *corev1.Pod) error {
	err := l.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			l.rec.Eventf(job, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		}
		return err
	}
	l.log.Debug("deleted pod", "namespace", job.Namespace, "name", job.Name, "pod", p.Name)
	l.rec.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
	return nil
}

func (l *loop) removeFinalizer(ctx context.Context, p *corev1.Pod) error {
	if !hasTrackingFinalizer(p) {
		return nil
	}
	_, err := l.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, removeFinalizerPatch(), metav1.PatchOptions{})
	return err
}

// trackStatus counts finished pods and finishes the job, writing status as
// few times as it can but always before taking finalizers off:
//
//  1. trackPods adds the newly finished pods to uncountedTerminatedPods
//     (and any interim condition); that status is written;
//  2. the finalizers of those pods are removed;
//  3. the pods whose finalizer is gone move to the counters, and the
//     final condition is added once nothing is uncounted or terminating;
//     that status is written, and the events recorded.
func (l *loop) trackStatus(ctx context.Context, key string, st *syncState, backoff backoffRecord, needsFlush bool) error {
	now := l.clock.Now()
	tr := st.trackPods(now, needsFlush)
	if tr.needsFlush {
		updated, err := l.updateStatus(ctx, st.job)
		if err != nil {
			return fmt.Errorf("adding uncounted pods to status: %w", err)
		}
		st.job = updated
		l.backoff.set(key, backoff)
		tr.needsFlush = false
	}
	var rmErr error
	if len(tr.removeFinalizer) > 0 {
		var ok []bool
		ok, rmErr = l.removeFinalizers(ctx, key, tr.removeFinalizer)
		for i, p := range tr.removeFinalizer {
			if ok[i] {
				delete(tr.uidsWithFinalizer, p.UID)
			}
		}
	}
	if cleanUncounted(&st.job.Status, tr.uidsWithFinalizer) {
		tr.needsFlush = true
	}
	if rmErr != nil {
		if tr.needsFlush {
			if _, err := l.updateStatus(ctx, st.job); err != nil {
				return fmt.Errorf("removing uncounted pods from status: %w", err)
			}
		}
		return rmErr
	}
	finished := !tr.reachedMax && st.enactFinished(now)
	if finished {
		tr.needsFlush = true
	}
	if !tr.needsFlush {
		return nil
	}
	updated, err := l.updateStatus(ctx, st.job)
	if err != nil {
		return fmt.Errorf("removing uncounted pods from status: %w", err)
	}
	if finished {
		l.recordFinished(updated, st.finished)
	}
	return nil
}

func (l *loop) updateStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	return l.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
}

// removeFinalizers takes the tracking finalizer off pods, expecting the
// informer to show it; ok[i] says whether pods[i] has none left (a pod
// gone counts).
func (l *loop) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) ([]bool, error) {
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	l.finExp.expectRemoved(key, uids)
	ok := make([]bool, len(pods))
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.removeFinalizer(ctx, p)
			if err != nil {
				l.finExp.removalObserved(key, p.UID)
				if !apierrors.IsNotFound(err) {
					errs[i] = fmt.Errorf("removing tracking finalizer: %w", err)
					return
				}
			}
			ok[i] = true
		}()
	}
	wg.Wait()
	return ok, utilerrors.NewAggregate(errs)
}

// recordFinished records upstream's events for a finished job.
func (l *loop) recordFinished(job *batchv1.Job, c *batchv1.JobCondition) {
	l.log.Info("job finished", "namespace", job.Namespace, "name", job.Name, "condition", c.Type, "reason", c.Reason)
	if c.Type == batchv1.JobComplete {
		if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
			l.rec.Event(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
		}
		l.rec.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
		return
	}
	l.rec.Event(job, corev1.EventTypeWarning, c.Reason, c.Message)
}

// podsForJob claims the pods of the job's namespace: those it controls
// and its selector matches, plus matching orphans it adopts (adding the
// tracking finalizer); controlled pods that no longer match are released.
// Terminal and terminating pods are included: they are counted.
func (l *loop) podsForJob(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("couldn't convert Job selector: %v", err)
	}
	all, err := l.pods.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	var errs []error
	var adoptErr error
	checked := false
	canAdopt := func() error {
		if checked {
			return adoptErr
		}
		checked = true
		fresh, err := l.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		adoptErr = controller.RecheckOwner(controllerKind.Kind, job, fresh, err)
		return adoptErr
	}
	for _, p := range all {
		switch controller.DecideClaim(job, p, !sel.Empty() && sel.Matches(labels.Set(p.Labels))) {
		case controller.KeepObject:
			out = append(out, p)
		case controller.AdoptObject:
			if err := canAdopt(); err != nil {
				errs = append(errs, fmt.Errorf("can't adopt Pod %v/%v (%v): %v", p.Namespace, p.Name, p.UID, err))
				continue
			}
			_, err := l.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, adoptPatch(job, p.UID), metav1.PatchOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			adopted := p.DeepCopy()
			if !hasTrackingFinalizer(adopted) {
				adopted.Finalizers = append(adopted.Finalizers, batchv1.JobTrackingFinalizer)
			}
			out = append(out, adopted)
		case controller.ReleaseObject:
			_, err := l.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, controller.ReleasePatch(job.UID, p.UID), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
				errs = append(errs, err)
			}
		}
	}
	return out, utilerrors.NewAggregate(errs)
}

// syncOrphanPod takes the tracking finalizer off a pod no unfinished job
// controls any more.
func (l *loop) syncOrphanPod(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return reconcile.Result{}, nil
	}
	p, err := l.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if ref := metav1.GetControllerOf(p); ref != nil {
		if ref.Kind != controllerKind.Kind || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
			return reconcile.Result{}, nil // not a Job's pod
		}
		if j := l.resolveControllerRef(p.Namespace, ref); j != nil {
			if managedElsewhere(j) || !isFinished(j) {
				return reconcile.Result{}, nil
			}
		}
	}
	if err := l.removeFinalizer(ctx, p); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}
