package job

import (
	"sort"
	"strconv"
	"strings"

	"plainkube.dev/plainkube/internal/api/podutil"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// unknownIndex is the completion index of a pod that has none (or an
// invalid one).
const unknownIndex = -1

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

// interval is a closed range of completion indexes.
type interval struct{ first, last int }

// intervals is an ordered list of disjoint, non-adjacent intervals: the
// compressed form of status.completedIndexes ("1,3-5,7").
type intervals []interval

// parseIntervals reads s, dropping what is not below completions and
// skipping malformed parts, as upstream does.
func parseIntervals(s string, completions int) intervals {
	if s == "" {
		return nil
	}
	var out intervals
	for _, part := range strings.Split(s, ",") {
		limits := strings.Split(part, "-")
		first, err := strconv.Atoi(limits[0])
		if err != nil {
			continue
		}
		if first >= completions {
			break
		}
		last := first
		if len(limits) > 1 {
			if last, err = strconv.Atoi(limits[1]); err != nil {
				continue
			}
			last = min(last, completions-1)
		}
		if n := len(out); n > 0 && out[n-1].last == first-1 {
			out[n-1].last = last
		} else {
			out = append(out, interval{first, last})
		}
	}
	return out
}

// String is the status.completedIndexes form: "0,1" for two adjacent
// indexes, "0-2" for three or more.
func (iv intervals) String() string {
	var b strings.Builder
	for _, v := range iv {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(v.first))
		if v.last > v.first {
			if v.last == v.first+1 {
				b.WriteByte(',')
			} else {
				b.WriteByte('-')
			}
			b.WriteString(strconv.Itoa(v.last))
		}
	}
	return b.String()
}

func (iv intervals) total() int {
	n := 0
	for _, v := range iv {
		n += v.last - v.first + 1
	}
	return n
}

func (iv intervals) has(ix int) bool {
	i := sort.Search(len(iv), func(i int) bool { return iv[i].last >= ix })
	return i < len(iv) && iv[i].first <= ix
}

// withIndexes is iv merged with the sorted indexes.
func (iv intervals) withIndexes(sorted []int) intervals {
	add := make(intervals, len(sorted))
	for i, ix := range sorted {
		add[i] = interval{ix, ix}
	}
	return iv.merge(add)
}

func (iv intervals) merge(other intervals) intervals {
	var out intervals
	push := func(v interval) {
		if n := len(out); n > 0 && v.first <= out[n-1].last+1 {
			out[n-1].last = max(out[n-1].last, v.last)
			return
		}
		out = append(out, v)
	}
	i, j := 0, 0
	for i < len(iv) && j < len(other) {
		if iv[i].first < other[j].first {
			push(iv[i])
			i++
		} else {
			push(other[j])
			j++
		}
	}
	for ; i < len(iv); i++ {
		push(iv[i])
	}
	for ; j < len(other); j++ {
		push(other[j])
	}
	return out
}

// succeededIndexes are the indexes in status.completedIndexes (prev) and
// those plus the indexes of succeeded pods not yet counted (cur).
func succeededIndexes(job *batchv1.Job, pods []*corev1.Pod) (prev, cur intervals) {
	completions := int(*job.Spec.Completions)
	prev = parseIntervals(job.Status.CompletedIndexes, completions)
	seen := map[int]bool{}
	var add []int
	for _, p := range pods {
		ix := completionIndex(p)
		if p.Status.Phase == corev1.PodSucceeded && ix != unknownIndex && ix < completions && hasTrackingFinalizer(p) && !seen[ix] {
			seen[ix] = true
			add = append(add, ix)
		}
	}
	sort.Ints(add)
	return prev, prev.withIndexes(add)
}

// firstPendingIndexes are the count lowest indexes below completions that
// neither succeeded nor have an active pod (nor, when only failed pods are
// replaced, a terminating one).
func firstPendingIndexes(job *batchv1.Job, succeeded intervals, active, all []*corev1.Pod, count int) []int {
	if count <= 0 {
		return nil
	}
	completions := int(*job.Spec.Completions)
	busy := indexSet(active)
	if onlyReplaceFailedPods(job) {
		var terminating []*corev1.Pod
		for _, p := range all {
			if podutil.IsTerminating(p) {
				terminating = append(terminating, p)
			}
		}
		for ix := range indexSet(terminating) {
			busy[ix] = true
		}
	}
	var out []int
	for ix := 0; ix < completions && len(out) < count; ix++ {
		if !busy[ix] && !succeeded.has(ix) {
			out = append(out, ix)
		}
	}
	return out
}

func indexSet(pods []*corev1.Pod) map[int]bool {
	out := map[int]bool{}
	for _, p := range pods {
		if ix := completionIndex(p); ix != unknownIndex {
			out[ix] = true
		}
	}
	return out
}

// podsForRemoval picks the active pods to delete: for an Indexed Job every
// pod without a valid index and all but one pod of each repeated index,
// then (for any job) the pods least far along until at least rmAtLeast are
// picked.
func podsForRemoval(job *batchv1.Job, active []*corev1.Pod, rmAtLeast int) []*corev1.Pod {
	var rm, left []*corev1.Pod
	if isIndexed(job) {
		completions := int(*job.Spec.Completions)
		byIndex := map[int][]*corev1.Pod{}
		var order []int
		for _, p := range active {
			ix := completionIndex(p)
			if ix == unknownIndex || ix >= completions {
				rm = append(rm, p)
				continue
			}
			if _, ok := byIndex[ix]; !ok {
				order = append(order, ix)
			}
			byIndex[ix] = append(byIndex[ix], p)
		}
		sort.Ints(order)
		for _, ix := range order {
			same := byIndex[ix]
			if len(same) > 1 {
				sort.Sort(byRemovalOrder(same))
			}
			rm = append(rm, same[:len(same)-1]...)
			left = append(left, same[len(same)-1])
		}
	} else {
		left = append(left, active...)
	}
	if len(rm) < rmAtLeast {
		sort.Sort(byRemovalOrder(left))
		rm = append(rm, left[:min(rmAtLeast-len(rm), len(left))]...)
	}
	return rm
}
