package job

import (
	"sort"
	"time"

	"plainkube.dev/plainkube/internal/api/podutil"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// MaxUncountedPods bounds status.uncountedTerminatedPods (about 20 KB of
// UIDs) and the finalizers one sync removes, as upstream.
const MaxUncountedPods = 500

// MaxPodCreateDeletePerSync bounds the pods one sync creates or deletes.
const MaxPodCreateDeletePerSync = 500

// Condition messages, as upstream's.
const (
	msgBackoffLimitExceeded = "Job has reached the specified backoff limit"
	msgDeadlineExceeded     = "Job was active longer than specified deadline"
	msgCompletionsReached   = "Reached expected number of succeeded pods"
)

// syncState is one sync's view of a job: a copy of the job whose status
// is being computed, the pods it owns, and what was derived from them.
// The functions on it are pure; the driver (sync.go) does the I/O between
// them.
type syncState struct {
	job  *batchv1.Job
	pods []*corev1.Pod
	// activePods are the pods neither terminal nor being deleted; active
	// is their number as the sync goes on (creates add, deletes subtract).
	activePods []*corev1.Pod
	active     int32
	ready      int32
	// terminating are the pods being deleted and not yet terminal.
	terminating int32
	// uncounted are the UIDs in status.uncountedTerminatedPods.
	uncountedSucceeded, uncountedFailed map[types.UID]bool
	// expectedRm are pods whose tracking finalizer this controller
	// removed (so already counted) although the cache still shows it.
	expectedRm map[types.UID]bool
	// newSucceeded and newFailed finished and are not counted anywhere
	// yet.
	newSucceeded, newFailed []*corev1.Pod
	// succeeded and failed are the totals including the uncounted.
	succeeded, failed int32
	// For Indexed Jobs: the indexes in status.completedIndexes, and those
	// plus the indexes of newly succeeded pods.
	prevSucceededIndexes, succeededIndexes intervals
	// For an Indexed Job with backoffLimitPerIndex (perIndex): the failed
	// indexes (status.failedIndexes and those failed since), and per index
	// still to run its last failed pod (see lastFailedPerIndex).
	perIndex      bool
	failedIndexes intervals
	lastFailed    map[int]*corev1.Pod
	// finished is the condition the job is heading for: FailureTarget or
	// SuccessCriteriaMet (written first, while pods are still being
	// finalized), then Failed or Complete.
	finished *batchv1.JobCondition
}

// newSyncState derives the counts of a job from its pods. job is a copy
// the sync may change; its status.uncountedTerminatedPods is not nil.
func newSyncState(job *batchv1.Job, pods []*corev1.Pod, expectedRm map[types.UID]bool) *syncState {
	st := &syncState{job: job, pods: pods, expectedRm: expectedRm,
		uncountedSucceeded: uidSet(job.Status.UncountedTerminatedPods.Succeeded),
		uncountedFailed:    uidSet(job.Status.UncountedTerminatedPods.Failed)}
	for _, p := range pods {
		if podutil.IsActive(p) {
			st.activePods = append(st.activePods, p)
			if podutil.IsReady(p) {
				st.ready++
			}
		}
		if podutil.IsTerminating(p) {
			st.terminating++
		}
	}
	st.active = int32(len(st.activePods))
	st.newSucceeded = st.uncountedPods(st.uncountedSucceeded, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	st.newFailed = st.uncountedPods(st.uncountedFailed, func(p *corev1.Pod) bool { return isPodFailed(p, job) })
	st.succeeded = job.Status.Succeeded + int32(len(st.newSucceeded)) + int32(len(st.uncountedSucceeded))
	st.failed = job.Status.Failed + int32(countedFailures(job, st.newFailed)) + int32(len(st.uncountedFailed))
	if isIndexed(job) && job.Spec.Completions != nil {
		st.prevSucceededIndexes, st.succeededIndexes = succeededIndexes(job, pods)
		st.succeeded = int32(st.succeededIndexes.total())
	}
	if st.perIndex = hasBackoffLimitPerIndex(job); st.perIndex {
		st.failedIndexes = failedIndexesOf(job, pods)
		st.lastFailed = st.lastFailedPerIndex()
	}
	return st
}

func uidSet(uids []types.UID) map[types.UID]bool {
	out := make(map[types.UID]bool, len(uids))
	for _, u := range uids {
		out[u] = true
	}
	return out
}

// uncountedPods are the pods that still carry the tracking finalizer
// (were not counted in an earlier sync), are not in uncounted, have a
// valid index for an Indexed Job, and pass keep.
func (st *syncState) uncountedPods(uncounted map[types.UID]bool, keep func(*corev1.Pod) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range st.pods {
		if !hasTrackingFinalizer(p) || uncounted[p.UID] || st.expectedRm[p.UID] {
			continue
		}
		if isIndexed(st.job) && validIndex(st.job, p) == unknownIndex {
			continue
		}
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

func completions(job *batchv1.Job) int32 {
	if job.Spec.Completions == nil {
		return 0
	}
	return *job.Spec.Completions
}

func isSuspended(job *batchv1.Job) bool { return job.Spec.Suspend != nil && *job.Spec.Suspend }

// decideFinished sets st.finished when the job has met its success
// criteria or must fail: an earlier SuccessCriteriaMet or FailureTarget
// condition stands; else a FailJob rule of the podFailurePolicy, more
// failures than backoffLimit (or, for OnFailure, as many container
// restarts), the active deadline; with backoffLimitPerIndex more failed
// indexes than maxFailedIndexes, or every index finished and some failed;
// or for an Indexed Job its successPolicy. When the deadline is still
// ahead it returns how long until it passes (0 otherwise).
func (st *syncState) decideFinished(now time.Time) (deadlineIn time.Duration) {
	job := st.job
	st.finished = nil
	if c := findCondition(job.Status.Conditions, batchv1.JobSuccessCriteriaMet); c != nil && c.Status == corev1.ConditionTrue {
		st.finished = c.DeepCopy()
		return 0
	}
	if c := findCondition(job.Status.Conditions, batchv1.JobFailureTarget); c != nil && c.Status == corev1.ConditionTrue {
		st.finished = newCondition(batchv1.JobFailed, c.Reason, c.Message, now)
		return 0
	}
	if msg := failJobMessage(job, st.pods); msg != "" {
		st.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, msg, now)
		return 0
	}
	switch {
	case st.failed > backoffLimit(job) || pastBackoffLimitOnFailure(job, st.pods):
		st.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, now)
		return 0
	case pastActiveDeadline(job, now):
		st.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded, msgDeadlineExceeded, now)
		return 0
	case job.Spec.ActiveDeadlineSeconds != nil && !isSuspended(job) && job.Status.StartTime != nil:
		deadlineIn = time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - now.Sub(job.Status.StartTime.Time)
	}
	if st.perIndex {
		failed := st.failedIndexes.total()
		switch {
		case job.Spec.MaxFailedIndexes != nil && failed > int(*job.Spec.MaxFailedIndexes):
			st.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexesExceeded, now)
			return deadlineIn
		case failed > 0 && failed+st.succeededIndexes.total() >= int(*job.Spec.Completions):
			st.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, msgFailedIndexes, now)
			return deadlineIn
		}
	}
	if isIndexed(job) && job.Spec.Completions != nil {
		if msg, ok := matchSuccessPolicy(job.Spec.SuccessPolicy, *job.Spec.Completions, st.succeededIndexes); ok {
			st.finished = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, msg, now)
		}
	}
	return deadlineIn
}

// pastActiveDeadline: the job (not suspended) has been active for
// activeDeadlineSeconds.
func pastActiveDeadline(job *batchv1.Job, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || isSuspended(job) {
		return false
	}
	return now.Sub(job.Status.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

// wantActive is how many pods should be running: parallelism, but no
// more than the completions still missing; without completions,
// parallelism until a pod succeeds and then whatever still runs.
func wantActive(job *batchv1.Job, succeeded, active int32) int32 {
	parallelism := int32(1)
	if job.Spec.Parallelism != nil {
		parallelism = *job.Spec.Parallelism
	}
	if job.Spec.Completions == nil {
		if succeeded > 0 {
			return active
		}
		return parallelism
	}
	return max(0, min(*job.Spec.Completions-succeeded, parallelism))
}

// isComplete: enough pods succeeded (any one, without completions) and
// none is still active.
func isComplete(job *batchv1.Job, succeeded, active int32) bool {
	if job.Spec.Completions == nil {
		return succeeded > 0 && active == 0
	}
	return succeeded >= *job.Spec.Completions && active == 0
}

// managePlan is what one sync does to a job's pods: delete some (taking
// their tracking finalizer off first, so they are not counted as
// failures), or create some, or wait for the pod failure backoff.
type managePlan struct {
	delete []*corev1.Pod
	// create is how many pods to create; for an Indexed Job, indexes are
	// their completion indexes.
	create  int
	indexes []int
	// failureCounts, with backoffLimitPerIndex, are the failure counts of
	// the indexes' new pods.
	failureCounts []indexFailureCounts
	// wait is the backoff left before a replacement pod may be created.
	wait time.Duration
}

// planManage decides a (not finished) job's pods: a suspended job loses
// all its active pods; otherwise surplus pods (and, for an Indexed Job,
// duplicated or invalid indexes) go first, and only then are missing pods
// created — unless backoff (the remaining pod failure backoff) is still
// running. Pods being deleted count as still running when only failed
// pods are replaced. With backoffLimitPerIndex failed indexes are not run
// again, each index has its own backoff (from base, at most maxDelay, at
// now) instead of the job's, and new pods carry their index's failure
// counts.
func (st *syncState) planManage(backoff time.Duration, now time.Time, base, maxDelay time.Duration) managePlan {
	job := st.job
	if isSuspended(job) {
		return managePlan{delete: podsForRemoval(job, st.activePods, len(st.activePods))}
	}
	want := wantActive(job, st.succeeded, st.active)
	rm := podsForRemoval(job, st.activePods, int(max(st.active-want, 0)))
	if len(rm) > 0 {
		if len(rm) > MaxPodCreateDeletePerSync {
			rm = rm[:MaxPodCreateDeletePerSync]
		}
		return managePlan{delete: rm}
	}
	var terminating int32
	if onlyReplaceFailedPods(job) {
		terminating = st.terminating
	}
	diff := want - terminating - st.active
	if diff <= 0 {
		return managePlan{}
	}
	if backoff > 0 && !st.perIndex {
		return managePlan{wait: backoff}
	}
	diff = min(diff, MaxPodCreateDeletePerSync)
	if !isIndexed(job) || job.Spec.Completions == nil {
		return managePlan{create: int(diff)}
	}
	ix := firstPendingIndexes(job, st.succeededIndexes.merge(st.failedIndexes), st.activePods, st.pods, int(diff))
	if !st.perIndex {
		return managePlan{create: len(ix), indexes: ix}
	}
	ix, wait := st.indexesReady(ix, now, base, maxDelay)
	if wait > 0 {
		return managePlan{wait: wait}
	}
	counts := make([]indexFailureCounts, len(ix))
	for i, v := range ix {
		counts[i] = replacementFailureCounts(job, st.lastFailed[v])
	}
	return managePlan{create: len(ix), indexes: ix, failureCounts: counts}
}

// successCondition is the condition of a job whose completions are
// reached: SuccessCriteriaMet first, Complete once its pods are
// finalized.
func successCondition(now time.Time) *batchv1.JobCondition {
	return newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, msgCompletionsReached, now)
}

// updateSuspended sets the JobSuspended condition (True while suspended,
// False with reason JobResumed after) and reports whether it changed. A
// resumed job starts its active deadline over: startTime is reset.
func (st *syncState) updateSuspended(now time.Time) (changed bool) {
	job := st.job
	if isSuspended(job) {
		job.Status.Conditions, changed = ensureCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now)
		return changed
	}
	job.Status.Conditions, changed = ensureCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", now)
	if changed {
		t := metav1.NewTime(now)
		job.Status.StartTime = &t
	}
	return changed
}

// tracking is what trackPods decided: which pods lose their tracking
// finalizer, which pods still carry it, and whether the status changed.
type tracking struct {
	removeFinalizer   []*corev1.Pod
	uidsWithFinalizer map[types.UID]bool
	needsFlush        bool
	// reachedMax: more pods finished than one sync may count.
	reachedMax bool
}

// trackPods is the first half of counting finished pods: each pod that
// finished (or that no longer matters, the job having finished or being
// deleted) is recorded in status.uncountedTerminatedPods — or, for an
// Indexed Job's successes, in completedIndexes — and listed for finalizer
// removal; an interim FailureTarget or SuccessCriteriaMet condition is
// added, and st.finished becomes the final Failed or Complete condition.
// The driver writes the status before removing the finalizers, so that a
// crash between the two loses no pod; cleanUncounted then moves the
// removed ones to the counters.
func (st *syncState) trackPods(now time.Time, needsFlush bool) tracking {
	job := st.job
	indexed := isIndexed(job) && job.Spec.Completions != nil
	pods := st.pods
	if indexed {
		pods = append([]*corev1.Pod(nil), pods...)
		sortByIndex(pods)
	}
	tr := tracking{uidsWithFinalizer: map[types.UID]bool{}, needsFlush: needsFlush}
	for _, p := range pods {
		if hasTrackingFinalizer(p) && !st.expectedRm[p.UID] {
			tr.uidsWithFinalizer[p.UID] = true
		}
	}
	if cleanUncounted(&job.Status, tr.uidsWithFinalizer) {
		tr.needsFlush = true
	}
	uncounted := job.Status.UncountedTerminatedPods
	var newIndexes []int
	for _, p := range pods {
		if !hasTrackingFinalizer(p) || st.expectedRm[p.UID] {
			continue // counted in an earlier sync
		}
		failed := isPodFailed(p, job)
		if !st.canRemoveFinalizer(p, failed) {
			continue
		}
		tr.removeFinalizer = append(tr.removeFinalizer, p)
		if p.Status.Phase == corev1.PodSucceeded && !st.uncountedFailed[p.UID] {
			if indexed {
				ix := completionIndex(p)
				if ix != unknownIndex && ix < int(*job.Spec.Completions) && !st.prevSucceededIndexes.has(ix) {
					newIndexes = append(newIndexes, ix)
					tr.needsFlush = true
				}
			} else if !st.uncountedSucceeded[p.UID] {
				uncounted.Succeeded = append(uncounted.Succeeded, p.UID)
				tr.needsFlush = true
			}
		} else if failed || (st.finished != nil && st.finished.Type != batchv1.JobSuccessCriteriaMet) {
			// Once the job fails, every pod not succeeded is a failure.
			ix := completionIndex(p)
			if !st.uncountedFailed[p.UID] && (!indexed || (ix != unknownIndex && ix < int(*job.Spec.Completions))) {
				if matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).count {
					uncounted.Failed = append(uncounted.Failed, p.UID)
					tr.needsFlush = true
				}
			}
		}
		if len(newIndexes)+len(uncounted.Succeeded)+len(uncounted.Failed) >= MaxUncountedPods {
			tr.reachedMax = true
			break
		}
	}
	if indexed {
		st.succeededIndexes = st.succeededIndexes.withIndexes(dedupSorted(newIndexes))
		if s := st.succeededIndexes.String(); s != job.Status.CompletedIndexes {
			job.Status.CompletedIndexes = s
			tr.needsFlush = true
		}
		job.Status.Succeeded = int32(st.succeededIndexes.total())
		var failed *string
		if st.perIndex {
			failed = ptr.To(st.failedIndexes.String())
		}
		if !ptr.Equal(job.Status.FailedIndexes, failed) {
			job.Status.FailedIndexes = failed
			tr.needsFlush = true
		}
	}
	if f := st.finished; f != nil {
		switch f.Type {
		case batchv1.JobFailureTarget:
			job.Status.Conditions = append(job.Status.Conditions, *f)
			tr.needsFlush = true
			st.finished = newCondition(batchv1.JobFailed, f.Reason, f.Message, now)
		case batchv1.JobSuccessCriteriaMet:
			if c := findCondition(job.Status.Conditions, batchv1.JobSuccessCriteriaMet); c == nil || c.Status != corev1.ConditionTrue {
				job.Status.Conditions = append(job.Status.Conditions, *f)
				tr.needsFlush = true
			}
			st.finished = newCondition(batchv1.JobComplete, f.Reason, f.Message, now)
		}
	}
	return tr
}

// canRemoveFinalizer: a pod's finalizer comes off once it succeeded or
// failed (with backoffLimitPerIndex, a failed pod its index waits to
// replace keeps it), or whatever its state once the job is finishing or
// being deleted.
func (st *syncState) canRemoveFinalizer(p *corev1.Pod, failed bool) bool {
	if st.job.DeletionTimestamp != nil || st.finished != nil || p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if !failed {
		return false
	}
	if st.perIndex {
		if last := st.lastFailed[completionIndex(p)]; last != nil && last.UID == p.UID {
			return false // until its replacement carries its failure counts
		}
	}
	return true
}

func sortByIndex(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool { return completionIndex(pods[i]) < completionIndex(pods[j]) })
}

func dedupSorted(ix []int) []int {
	var out []int
	for i, v := range ix {
		if i == 0 || v != ix[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// cleanUncounted moves the pods of status.uncountedTerminatedPods that no
// longer carry the tracking finalizer to the succeeded and failed
// counters, and reports whether anything moved.
func cleanUncounted(status *batchv1.JobStatus, withFinalizer map[types.UID]bool) bool {
	u := status.UncountedTerminatedPods
	if u == nil {
		return false
	}
	changed := false
	keep := func(uids []types.UID) ([]types.UID, int32) {
		var out []types.UID
		for _, uid := range uids {
			if withFinalizer[uid] {
				out = append(out, uid)
			}
		}
		return out, int32(len(uids) - len(out))
	}
	if rest, n := keep(u.Succeeded); n > 0 {
		status.Succeeded += n
		u.Succeeded = rest
		changed = true
	}
	if rest, n := keep(u.Failed); n > 0 {
		status.Failed += n
		u.Failed = rest
		changed = true
	}
	return changed
}

// enactFinished adds the final Complete (with completionTime) or Failed
// condition once no pod is left uncounted or terminating, and reports
// whether it did.
func (st *syncState) enactFinished(now time.Time) bool {
	f := st.finished
	if f == nil {
		return false
	}
	if u := st.job.Status.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
		return false
	}
	if st.terminating > 0 {
		return false
	}
	st.job.Status.Conditions, _ = ensureCondition(st.job.Status.Conditions, f.Type, f.Status, f.Reason, f.Message, now)
	if f.Type == batchv1.JobComplete {
		t := f.LastTransitionTime
		st.job.Status.CompletionTime = &t
	}
	return true
}

func newCondition(t batchv1.JobConditionType, reason, message string, now time.Time) *batchv1.JobCondition {
	return &batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
}

func findCondition(list []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}

// ensureCondition sets the condition of type t, replacing one whose
// status, reason or message differ; a False condition is not added where
// there is none. It reports whether the list changed.
func ensureCondition(list []batchv1.JobCondition, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) ([]batchv1.JobCondition, bool) {
	if c := findCondition(list, t); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == message {
			return list, false
		}
		*c = *newCondition(t, reason, message, now)
		c.Status = status
		return list, true
	}
	if status == corev1.ConditionFalse {
		return list, false
	}
	c := newCondition(t, reason, message, now)
	c.Status = status
	return append(list, *c), true
}

// finishedCondition is the job's Complete or Failed condition, if True.
func finishedCondition(job *batchv1.Job) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func isFinished(job *batchv1.Job) bool { return finishedCondition(job) != nil }
