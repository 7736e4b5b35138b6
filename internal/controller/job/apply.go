package job

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

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

// observe reads the job named by key and, unless it will not be synced,
// the pods of its namespace. A job gone is forgotten.
func (l *loop) observe(key string) (State, bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return State{}, false, nil
	}
	job, err := l.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		l.exp.Forget(key)
		l.finExp.Forget(key)
		l.backoff.remove(key)
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	st := State{Job: job, Backoff: l.backoff.get(key), BackoffBase: l.backoffBase, BackoffMax: l.backoffMax}
	if isFinished(job) || managedElsewhere(job) {
		st.Now = l.clock.Now()
		return st, true, nil
	}
	// Check expectations before listing pods: a pod created after the
	// check makes the next sync wait, never this one double-create.
	st.Satisfied = l.exp.Satisfied(key)
	if st.Pods, err = l.pods.Pods(ns).List(labels.Everything()); err != nil {
		return State{}, false, err
	}
	st.FinalizersRemoved = l.finExp.Pending(key)
	st.Now = l.clock.Now()
	return st, true, nil
}

// apply carries out a job's Plan: the claims, then stopping a finished
// job's pods or managing them, then the status (trackStatus).
func (l *loop) apply(ctx context.Context, s State, p Plan) (reconcile.Result, error) {
	key := jobKey(s.Job)
	if p.Finished {
		l.backoff.remove(key)
		return reconcile.Result{}, l.applyTTL(ctx, key, s.Job, p)
	}
	if p.Warning != nil {
		l.rec.Event(s.Job, p.Warning.Type, p.Warning.Reason, p.Warning.Message)
	}
	if p.LogError != "" {
		l.log.Error(p.LogError, "namespace", s.Job.Namespace, "name", s.Job.Name)
	}
	if p.Skip || p.Err != nil {
		return reconcile.Result{}, p.Err
	}
	gone, err := l.claim(ctx, s.Job, p.Adopt, p.Release)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(gone) > 0 {
		// Orphans deleted before they could be adopted: plan again
		// without them (the other claims are made).
		s.Pods = withoutPods(s.Pods, gone)
		p = plan(s)
		if p.Err != nil {
			return reconcile.Result{}, p.Err
		}
	}
	st, job, now := p.Sync, p.Sync.job, s.Now
	if p.RequeueAfter > 0 {
		l.log.Debug("job has an active deadline; will look again", "namespace", job.Namespace, "name", job.Name, "in", p.RequeueAfter)
		l.queue.AddAfter(key, p.RequeueAfter)
	}

	var manageErr error
	suspendChanged := false
	if st.finished != nil {
		// Stop what still runs; the pods keep their finalizer and are
		// counted as failures (unless the job succeeded).
		ready, deleted, err := l.deleteActivePods(ctx, job, p.StopActive)
		if deleted != len(p.StopActive) || !s.Satisfied {
			// Pods may remain, or be missing from the cache: not yet.
			st.finished = nil
		}
		st.active -= int32(deleted)
		st.terminating += int32(deleted)
		st.ready -= ready
		manageErr = err
	} else {
		if p.Manage != nil {
			manageErr = l.manage(ctx, key, st, *p.Manage)
		}
		if isComplete(job, st.succeeded, st.active) {
			st.finished = successCondition(now)
		} else if p.Manage != nil {
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
		!startTimeEqual(s.Job.Status.StartTime, job.Status.StartTime)
	job.Status.Active = st.active
	job.Status.Ready = &st.ready
	job.Status.Terminating = &st.terminating
	if err := l.trackStatus(ctx, key, st, p.Backoff, needsFlush); err != nil {
		return reconcile.Result{}, fmt.Errorf("tracking status: %w", err)
	}
	return reconcile.Result{}, manageErr
}

func withoutPods(pods, drop []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if !slices.Contains(drop, p) {
			out = append(out, p)
		}
	}
	return out
}

func int32PtrEqual(p *int32, v int32) bool { return p != nil && *p == v }

func startTimeEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

// manage carries out a managePlan: deletes, backoff, or creates.
func (l *loop) manage(ctx context.Context, key string, st *syncState, plan managePlan) error {
	switch {
	case len(plan.delete) > 0:
		l.exp.ExpectDeletions(key, controller.ObjectKeys(plan.delete))
		ready, removed, err := l.deleteJobPods(ctx, st.job, key, plan.delete)
		st.active -= int32(removed)
		st.terminating += int32(removed)
		st.ready -= ready
		return err
	case plan.wait > 0:
		l.log.Debug("pod failure backoff; will create pods later", "namespace", st.job.Namespace, "name", st.job.Name, "in", plan.wait)
		l.queue.AddAfter(key, max(plan.wait, l.batch))
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
		if err == nil && plan.failureCounts != nil {
			setFailureCounts(pod, plan.failureCounts[i])
		}
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
// counted as a failure) and deletes it, expecting the informer to show the
// deletions. It returns how many ready pods and how many pods in all it
// deleted.
func (l *loop) deleteJobPods(ctx context.Context, job *batchv1.Job, key string, pods []*corev1.Pod) (int32, int, error) {
	return deleteEach(pods, func(p *corev1.Pod) error {
		err := l.removeFinalizer(ctx, p)
		if err == nil {
			err = l.deletePodAPI(ctx, job, p)
		}
		if err != nil {
			// Its deletion will not be seen (or was already).
			l.exp.DeletionObserved(key, controller.ObjectKey(p))
		}
		return err
	})
}

// deleteActivePods deletes the pods of a finishing job, keeping their
// finalizers: trackStatus counts them, then lets them go.
func (l *loop) deleteActivePods(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) (int32, int, error) {
	return deleteEach(pods, func(p *corev1.Pod) error { return l.deletePodAPI(ctx, job, p) })
}

// deleteEach runs del on every pod at once; a pod already gone counts as
// deleted. It returns how many ready pods and how many pods in all were
// deleted.
func deleteEach(pods []*corev1.Pod, del func(*corev1.Pod) error) (int32, int, error) {
	var ready, removed atomic.Int32
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := del(p); err != nil && !apierrors.IsNotFound(err) {
				errs[i] = err
				return
			}
			removed.Add(1)
			if podutil.IsReady(p) {
				ready.Add(1)
			}
		}()
	}
	wg.Wait()
	return ready.Load(), int(removed.Load()), utilerrors.NewAggregate(errs)
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
	l.finExp.Expect(key, uids)
	ok := make([]bool, len(pods))
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.removeFinalizer(ctx, p)
			if err != nil {
				l.finExp.Observed(key, p.UID)
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

// claim adopts orphans (after a live GET shows the job may still adopt)
// and releases pods, as the plan says. gone are orphans deleted before
// they could be adopted.
func (l *loop) claim(ctx context.Context, job *batchv1.Job, adopt, release []*corev1.Pod) (gone []*corev1.Pod, err error) {
	var errs []error
	if len(adopt) > 0 {
		fresh, err := l.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err := controller.RecheckOwner(controllerKind.Kind, job, fresh, err); err != nil {
			for _, p := range adopt {
				errs = append(errs, fmt.Errorf("can't adopt Pod %v/%v (%v): %v", p.Namespace, p.Name, p.UID, err))
			}
			adopt = nil
		}
	}
	for _, p := range adopt {
		_, err := l.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, adoptPatch(job, p.UID), metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			gone = append(gone, p)
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range release {
		_, err := l.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, controller.ReleasePatch(job.UID, p.UID), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			errs = append(errs, err)
		}
	}
	return gone, utilerrors.NewAggregate(errs)
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
		if j := l.owner(p.Namespace, ref); j != nil {
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
