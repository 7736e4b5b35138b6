package job

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/controller"
)

// State is what one sync of a job looks at: the job and its namespace's
// pods from the informer caches, and what the controller remembers of it.
type State struct {
	// Job is the job as the cache has it (not to be modified).
	Job *batchv1.Job
	// Pods are the pods of the job's namespace (none read for a job that
	// will not be synced: finished, managed elsewhere).
	Pods []*corev1.Pod
	// Satisfied: the creates and deletes asked for were all seen, so the
	// job's pods may be managed.
	Satisfied bool
	// FinalizersRemoved are the pods whose tracking finalizer the
	// controller removed while the cache still shows it.
	FinalizersRemoved map[types.UID]bool
	// Backoff is the job's pod failure backoff so far; BackoffBase and
	// BackoffMax its delays.
	Backoff                 backoffRecord
	BackoffBase, BackoffMax time.Duration
	Now                     time.Time
}

// Plan is what one sync of a job does.
type Plan struct {
	// Err: the job cannot be synced (a selector that does not parse, a
	// finished job without a finish time).
	Err error
	// Skip: the job is not synced (managed elsewhere, invalid); Warning, if
	// set, is the event to record about it and LogError what to log.
	Skip     bool
	Warning  *plannedEvent
	LogError string
	// Finished: the job has finished; only its TTL is looked after:
	// DeleteExpired once it has passed (checked again on a fresh read),
	// else the job is looked at again after RequeueAfter.
	Finished, DeleteExpired bool
	// RequeueAfter, if positive, is when to look at the job again: its TTL
	// or its active deadline.
	RequeueAfter time.Duration
	// Adopt are matching orphans the job takes (with the tracking
	// finalizer); Release its pods that stopped matching.
	Adopt, Release []*corev1.Pod
	// Sync is the job's status being computed (a copy, startTime set) and
	// its pods once the claims are made, counted.
	Sync *syncState
	// Backoff is the pod failure backoff after the newly finished pods.
	Backoff backoffRecord
	// StopActive, for a job that must stop (Sync.finished set), are the
	// active pods to delete, keeping their finalizers.
	StopActive []*corev1.Pod
	// Manage, when the expectations allow, is the pods to delete or
	// create, or the backoff to wait; nil: the pods are not managed.
	Manage *managePlan
}

// plannedEvent is an event the plan records about the job.
type plannedEvent struct{ Type, Reason, Message string }

// plan decides one sync of a job: a finished job's TTL; otherwise the
// claims on its pods, the counts of its pods, whether it must stop (and
// which pods then go), and which pods to delete or create. How the status
// is tracked after the writes (trackPods, cleanUncounted, enactFinished)
// follows from how they went.
func plan(st State) Plan {
	job := st.Job
	if isFinished(job) {
		return planTTL(job, st.Now)
	}
	if managedElsewhere(job) {
		return Plan{Skip: true}
	}
	if m := job.Spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		return Plan{Skip: true, Warning: &plannedEvent{corev1.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown"}}
	}
	if isIndexed(job) && job.Spec.Completions == nil {
		return Plan{Skip: true} // invalid; the API server does not accept it
	}
	if sel := job.Spec.Selector; sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		// It would claim no pod (or every pod): never create any.
		return Plan{Skip: true, LogError: "job has no selector; not syncing"}
	}
	w := job.DeepCopy()
	if w.Status.UncountedTerminatedPods == nil {
		w.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	var p Plan
	var pods []*corev1.Pod
	pods, p.Adopt, p.Release, p.Err = claimPods(w, st.Pods)
	if p.Err != nil {
		return p
	}
	ss := newSyncState(w, pods, st.FinalizersRemoved)
	if w.Status.StartTime == nil && !isSuspended(w) {
		t := metav1.NewTime(st.Now)
		w.Status.StartTime = &t
	}
	p.Sync = ss
	p.Backoff = nextBackoff(st.Backoff, ss.newSucceeded, ss.newFailed)
	p.RequeueAfter = max(ss.decideFinished(st.Now), 0)
	switch {
	case ss.finished != nil:
		p.StopActive = ss.activePods
	case st.Satisfied && w.DeletionTimestamp == nil:
		m := ss.planManage(p.Backoff.remaining(st.Now, st.BackoffBase, st.BackoffMax), st.Now, st.BackoffBase, st.BackoffMax)
		p.Manage = &m
	}
	return p
}

// planTTL is upstream's TTL-after-finished controller's decision for a
// finished job: nothing without a TTL, delete once it has passed, else look
// again when it will.
func planTTL(job *batchv1.Job, now time.Time) Plan {
	at, ok, err := ttlExpiry(job)
	p := Plan{Finished: true, Err: err}
	if err != nil || !ok {
		return p
	}
	if left := at.Sub(now); left > 0 {
		p.RequeueAfter = left
	} else {
		p.DeleteExpired = true
	}
	return p
}

// claimPods is upstream's claim of a job's pods among those of its
// namespace: pods it controls that its selector matches, and matching
// orphans it adopts (shown here with the tracking finalizer the adoption
// adds); pods it controls that stopped matching are released. Terminal
// and terminating pods are included: they are counted.
func claimPods(job *batchv1.Job, all []*corev1.Pod) (pods, adopt, release []*corev1.Pod, err error) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("couldn't convert Job selector: %v", err)
	}
	for _, p := range all {
		switch controller.DecideClaim(job, p, !sel.Empty() && sel.Matches(labels.Set(p.Labels))) {
		case controller.KeepObject:
			pods = append(pods, p)
		case controller.AdoptObject:
			adopt = append(adopt, p)
			adopted := p.DeepCopy()
			if !hasTrackingFinalizer(adopted) {
				adopted.Finalizers = append(adopted.Finalizers, batchv1.JobTrackingFinalizer)
			}
			pods = append(pods, adopted)
		case controller.ReleaseObject:
			release = append(release, p)
		}
	}
	return pods, adopt, release, nil
}

// managedElsewhere: spec.managedBy names another controller.
func managedElsewhere(j *batchv1.Job) bool {
	return j.Spec.ManagedBy != nil && *j.Spec.ManagedBy != batchv1.JobControllerName
}

// orphanedWithFinalizer: p carries the tracking finalizer but no job will
// take it off — it has no controller, its job (owner, nil when the
// reference resolves to none) is gone, or it is being deleted (or gone)
// while its job has finished. Such pods go to the orphan queue. A pod first
// seen after its job's deletion event counts too: the deletion's own sweep
// of the job's pods cannot have found it.
func orphanedWithFinalizer(p *corev1.Pod, gone bool, owner *batchv1.Job) bool {
	if !hasTrackingFinalizer(p) {
		return false
	}
	if metav1.GetControllerOfNoCopy(p) == nil || owner == nil {
		return true
	}
	if !gone && p.DeletionTimestamp == nil {
		return false
	}
	return isFinished(owner)
}
