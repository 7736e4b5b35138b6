package cronjob

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/reference"

	"plainkube.dev/plainkube/internal/reconcile"
)

// sync reconciles one CronJob: it removes finished jobs beyond the
// history limits, brings status.active and lastSuccessfulTime up to date,
// starts the job of a due schedule time, writes the status once, and
// looks again at the next schedule time.
func (l *loop) sync(ctx context.Context, k string) (reconcile.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(k)
	if err != nil {
		return reconcile.Result{}, nil
	}
	shared, err := l.cronJobs.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	jobs, err := l.jobsOf(shared)
	if err != nil {
		return reconcile.Result{}, err
	}
	cj := shared.DeepCopy()
	if cacheBehind(cj, jobs) {
		// A running job the cached status does not list: most likely our
		// own status write is not in the cache yet. Work from a live copy.
		if cj, err = l.client.BatchV1().CronJobs(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return reconcile.Result{}, err
		}
	}
	cleaned := l.cleanupFinishedJobs(ctx, cj, jobs)
	requeue, changed, syncErr := l.syncCronJob(ctx, cj, jobs)
	if syncErr != nil {
		l.log.Info("error reconciling cronjob", "namespace", ns, "name", name, "err", syncErr)
	}
	if cleaned || changed {
		if _, err := l.client.BatchV1().CronJobs(ns).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{Requeue: true}, nil
			}
			return reconcile.Result{}, fmt.Errorf("updating status of cronjob %s: %w", k, err)
		}
	}
	if requeue != nil {
		return reconcile.Result{RequeueAfter: max(*requeue, nextScheduleDelta)}, nil
	}
	return reconcile.Result{}, syncErr
}

// cacheBehind: cj controls an unfinished job its status does not list.
func cacheBehind(cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	for _, j := range jobs {
		if !isJobFinished(j) && !inActiveList(cj, j.UID) {
			return true
		}
	}
	return false
}

// jobsOf are the jobs cj controls (whatever their labels).
func (l *loop) jobsOf(cj *batchv1.CronJob) ([]*batchv1.Job, error) {
	all, err := l.jobs.Jobs(cj.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*batchv1.Job
	for _, j := range all {
		if ref := metav1.GetControllerOf(j); ref != nil && ref.Kind == controllerKind.Kind && ref.UID == cj.UID {
			out = append(out, j)
		}
	}
	return out, nil
}

// cleanupFinishedJobs deletes the finished jobs beyond the history limits
// and reports whether cj's status changed.
func (l *loop) cleanupFinishedJobs(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	changed := false
	for _, j := range jobsToClean(cj, jobs) {
		if l.removeJob(ctx, cj, j) {
			changed = true
		}
	}
	return changed
}

// removeJob deletes a job (its pods in the background) and its reference
// in status.active.
func (l *loop) removeJob(ctx context.Context, cj *batchv1.CronJob, j *batchv1.Job) bool {
	policy := metav1.DeletePropagationBackground
	err := l.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if err != nil && !apierrors.IsNotFound(err) {
		l.rec.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		l.log.Error("error deleting job", "namespace", cj.Namespace, "name", cj.Name, "job", j.Name, "err", err)
		return false
	}
	deleteFromActiveList(cj, j.UID)
	l.rec.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", j.Name)
	return true
}

// syncCronJob updates cj's status from its jobs and starts the job of the
// due schedule time, if any. It returns when to look again (nil: only when
// something changes) and whether the status changed.
func (l *loop) syncCronJob(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (*time.Duration, bool, error) {
	now := l.clock.Now()
	changed := false
	children := map[string]bool{}
	for _, j := range jobs {
		children[string(j.UID)] = true
		found := inActiveList(cj, j.UID)
		switch {
		case !found && !isJobFinished(j):
			// Not created by this controller, or forgotten (cj is a live
			// copy here, see cacheBehind).
			l.rec.Eventf(cj, corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		case found && isJobFinished(j):
			deleteFromActiveList(cj, j.UID)
			l.rec.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, finishedType(j))
			changed = true
		}
		if finishedType(j) == batchv1.JobComplete && j.Status.CompletionTime != nil {
			if last := cj.Status.LastSuccessfulTime; last == nil || j.Status.CompletionTime.After(last.Time) {
				t := *j.Status.CompletionTime
				cj.Status.LastSuccessfulTime = &t
				changed = true
			}
		}
	}
	// Active jobs the cache does not show: gone, or the cache is behind.
	for _, ref := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
		if children[string(ref.UID)] {
			continue
		}
		_, err := l.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			l.rec.Eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", ref.Name)
			deleteFromActiveList(cj, ref.UID)
			changed = true
		case err != nil:
			return nil, changed, err
		}
	}

	p := plan(State{CronJob: cj, Now: now})
	for _, e := range p.Events {
		l.rec.Event(cj, e.Type, e.Reason, e.Message)
	}
	if p.TooManyMissed {
		l.log.Info("too many missed times", "namespace", cj.Namespace, "name", cj.Name)
	}
	if p.Start == nil {
		return p.RequeueAfter, changed, nil
	}
	scheduled := p.Start
	if p.ReplaceActive {
		for _, ref := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
			j, err := l.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				l.rec.Eventf(cj, corev1.EventTypeWarning, "FailedGet", "Get job: %v", err)
				return nil, changed, err
			}
			if !l.removeJob(ctx, cj, j) {
				return nil, changed, fmt.Errorf("could not replace job %s/%s", j.Namespace, j.Name)
			}
			changed = true
		}
	}

	req, err := jobFromTemplate(cj, *scheduled)
	if err != nil {
		return nil, changed, err
	}
	created, err := l.client.BatchV1().Jobs(cj.Namespace).Create(ctx, req, metav1.CreateOptions{})
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, changed, err
	case apierrors.IsAlreadyExists(err):
		// Made earlier, perhaps by us before a status write was lost.
		existing, err := l.client.BatchV1().Jobs(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
		if err != nil {
			return nil, changed, err
		}
		if !metav1.IsControlledBy(existing, cj) || inActiveList(cj, existing.UID) {
			return nil, changed, nil
		}
		l.log.Info("job already exists", "namespace", cj.Namespace, "name", cj.Name, "job", req.Name)
		created = existing
	case err != nil:
		l.rec.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return nil, changed, err
	default:
		l.log.Debug("created job", "namespace", cj.Namespace, "name", cj.Name, "job", created.Name)
		l.rec.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
	}
	ref, err := reference.GetReference(scheme.Scheme, created)
	if err != nil {
		return nil, changed, fmt.Errorf("unable to make object reference for job for %s/%s", cj.Namespace, cj.Name)
	}
	cj.Status.Active = append(cj.Status.Active, *ref)
	cj.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	changed = true
	return p.RequeueAfter, changed, nil
}
