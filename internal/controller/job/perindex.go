package job

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Condition messages of a job with backoffLimitPerIndex, as upstream's.
const (
	msgFailedIndexes            = "Job has failed indexes"
	msgMaxFailedIndexesExceeded = "Job has exceeded the specified maximal number of failed indexes"
)

// hasBackoffLimitPerIndex: an Indexed Job whose indexes fail on their own
// (the API server accepts backoffLimitPerIndex on Indexed Jobs only).
func hasBackoffLimitPerIndex(job *batchv1.Job) bool {
	return job.Spec.BackoffLimitPerIndex != nil && isIndexed(job) && job.Spec.Completions != nil
}

// indexFailureCounts are the failures of an index before its pod: those
// counted towards backoffLimitPerIndex and those a podFailurePolicy Ignore
// rule matched. Pods carry them in the batch.kubernetes.io/
// job-index-failure-count and job-index-ignored-failure-count annotations.
type indexFailureCounts struct{ counted, ignored int32 }

// podIndexFailureCounts reads p's annotations; a missing or malformed
// value (not an int32 ≥ 0) is 0.
func podIndexFailureCounts(p *corev1.Pod) indexFailureCounts {
	return indexFailureCounts{
		counted: annotationCount(p, batchv1.JobIndexFailureCountAnnotation),
		ignored: annotationCount(p, batchv1.JobIndexIgnoredFailureCountAnnotation),
	}
}

func annotationCount(p *corev1.Pod, key string) int32 {
	v, ok := p.Annotations[key]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return int32(n)
}

// replacementFailureCounts are the counts of the pod that replaces
// replaced (nil: the index's first pod): replaced's counts plus its own
// failure, counted or ignored as the podFailurePolicy says.
func replacementFailureCounts(job *batchv1.Job, replaced *corev1.Pod) indexFailureCounts {
	if replaced == nil {
		return indexFailureCounts{}
	}
	c := podIndexFailureCounts(replaced)
	if matchPodFailurePolicy(job.Spec.PodFailurePolicy, replaced).count {
		c.counted++
	} else {
		c.ignored++
	}
	return c
}

// setFailureCounts writes c to the pod's annotations (the ignored count
// only when not 0).
func setFailureCounts(p *corev1.Pod, c indexFailureCounts) {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(c.counted))
	if c.ignored > 0 {
		p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(c.ignored))
	}
}

// indexFailed: p's failure fails its index — it matched a FailIndex rule,
// or it counts and its index had failed backoffLimitPerIndex times
// before it.
func indexFailed(job *batchv1.Job, p *corev1.Pod) bool {
	if !isPodFailed(p, job) {
		return false
	}
	m := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
	if m.action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	return m.count && podIndexFailureCounts(p).counted >= *job.Spec.BackoffLimitPerIndex
}

// validIndex is p's completion index if it is below the job's
// completions, else unknownIndex.
func validIndex(job *batchv1.Job, p *corev1.Pod) int {
	ix := completionIndex(p)
	if ix == unknownIndex || ix >= int(completions(job)) {
		return unknownIndex
	}
	return ix
}

// failedIndexesOf are the indexes in status.failedIndexes and those of
// pods not yet counted (still carrying the tracking finalizer) whose
// failure fails their index.
func failedIndexesOf(job *batchv1.Job, pods []*corev1.Pod) intervals {
	var prev intervals
	if job.Status.FailedIndexes != nil {
		prev = parseIntervals(*job.Status.FailedIndexes, int(completions(job)))
	}
	seen := map[int]bool{}
	for _, p := range pods {
		if ix := validIndex(job, p); ix != unknownIndex && hasTrackingFinalizer(p) && indexFailed(job, p) {
			seen[ix] = true
		}
	}
	return prev.withIndexes(slices.Sorted(maps.Keys(seen)))
}

// lastFailedPerIndex is, for each index that neither succeeded, failed nor
// has an active pod, its uncounted failed pod with the most failures
// (the latest to finish among equals). Its finalizer is kept until its
// replacement is created, so the replacement's failure counts are
// carried over from it; the index's backoff runs from its finish.
func (st *syncState) lastFailedPerIndex() map[int]*corev1.Pod {
	job := st.job
	active := indexSet(st.activePods)
	out := map[int]*corev1.Pod{}
	for _, p := range st.pods {
		if !hasTrackingFinalizer(p) || st.expectedRm[p.UID] || !isPodFailed(p, job) {
			continue
		}
		ix := validIndex(job, p)
		if ix == unknownIndex || active[ix] || st.succeededIndexes.has(ix) || st.failedIndexes.has(ix) {
			continue
		}
		last, ok := out[ix]
		if !ok {
			out[ix] = p
			continue
		}
		lc, pc := podIndexFailureCounts(last), podIndexFailureCounts(p)
		if lc.counted+lc.ignored <= pc.counted+pc.ignored && !finishedTime(p).Before(finishedTime(last)) {
			out[ix] = p
		}
	}
	return out
}

// indexBackoff is how long index ix must still wait for a new pod: its
// last failed pod's failures plus one, doubling from base as the job's
// backoff does, from when that pod finished.
func (st *syncState) indexBackoff(ix int, now time.Time, base, maxDelay time.Duration) time.Duration {
	last := st.lastFailed[ix]
	if last == nil {
		return 0
	}
	c := podIndexFailureCounts(last)
	t := finishedTime(last)
	return backoffRecord{failuresAfterLastSuccess: c.counted + c.ignored + 1, lastFailureTime: &t}.remaining(now, base, maxDelay)
}

// indexesReady keeps the indexes whose backoff has passed; when none has,
// wait is the shortest backoff left.
func (st *syncState) indexesReady(indexes []int, now time.Time, base, maxDelay time.Duration) (ready []int, wait time.Duration) {
	for _, ix := range indexes {
		left := st.indexBackoff(ix, now, base, maxDelay)
		switch {
		case left == 0:
			ready = append(ready, ix)
		case wait == 0 || left < wait:
			wait = left
		}
	}
	if len(ready) > 0 {
		return ready, 0
	}
	return nil, wait
}
