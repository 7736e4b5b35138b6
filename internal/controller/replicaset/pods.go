package replicaset

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"plainkube.dev/plainkube/internal/api/podutil"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodDeletionCostAnnotation ranks a pod for deletion on scale-down: lower
// cost goes first (an int32; anything else counts as 0).
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// podsPrefix is the generateName of the pods of the workload called name.
func podsPrefix(name string) string {
	prefix := name + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		prefix = name
	}
	return prefix
}

// podFromTemplate is the pod a workload creates: the template's labels,
// annotations, finalizers and spec, named after the owner, controlled by
// ref.
func podFromTemplate(t *corev1.PodTemplateSpec, ownerName string, ref *metav1.OwnerReference) (*corev1.Pod, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: podsPrefix(ownerName)}}
	if len(t.Labels) > 0 {
		pod.Labels = make(map[string]string, len(t.Labels))
		for k, v := range t.Labels {
			pod.Labels[k] = v
		}
	}
	if len(t.Annotations) > 0 {
		pod.Annotations = make(map[string]string, len(t.Annotations))
		for k, v := range t.Annotations {
			pod.Annotations[k] = v
		}
	}
	if len(t.Finalizers) > 0 {
		pod.Finalizers = append([]string(nil), t.Finalizers...)
	}
	if ref != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	pod.Spec = *t.Spec.DeepCopy()
	if len(pod.Labels) == 0 {
		return nil, fmt.Errorf("unable to create pods, no labels")
	}
	return pod, nil
}

// podsToDelete picks the diff pods of filtered to delete first. related are
// the pods of every workload with the same controller (the deployment's
// other ReplicaSets): a pod on a node with more of them goes first.
func podsToDelete(filtered, related []*corev1.Pod, diff int, now time.Time) []*corev1.Pod {
	if diff >= len(filtered) {
		return filtered
	}
	ranked := rankPods(filtered, related, now)
	sort.Sort(ranked)
	return ranked.pods[:diff]
}

func rankPods(pods, related []*corev1.Pod, now time.Time) rankedPods {
	onNode := map[string]int{}
	for _, p := range related {
		if podutil.IsActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	r := rankedPods{pods: append([]*corev1.Pod(nil), pods...), rank: make([]int, len(pods)), now: now}
	for i, p := range r.pods {
		r.rank[i] = onNode[p.Spec.NodeName]
	}
	return r
}

// rankedPods sorts pods in upstream's deletion order (ActivePodsWithRanks,
// with PodDeletionCost and LogarithmicScaleDown on, as by default): the
// first is deleted first.
type rankedPods struct {
	pods []*corev1.Pod
	rank []int
	now  time.Time
}

func (s rankedPods) Len() int { return len(s.pods) }
func (s rankedPods) Swap(i, j int) {
	s.pods[i], s.pods[j] = s.pods[j], s.pods[i]
	s.rank[i], s.rank[j] = s.rank[j], s.rank[i]
}

var phaseOrdinal = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

func (s rankedPods) Less(i, j int) bool {
	pi, pj := s.pods[i], s.pods[j]
	// 1. Unassigned before assigned.
	if pi.Spec.NodeName != pj.Spec.NodeName && (pi.Spec.NodeName == "" || pj.Spec.NodeName == "") {
		return pi.Spec.NodeName == ""
	}
	// 2. Pending before Unknown before Running.
	if oi, oj := phaseOrdinal[pi.Status.Phase], phaseOrdinal[pj.Status.Phase]; oi != oj {
		return oi < oj
	}
	// 3. Not ready before ready.
	if ri, rj := podutil.IsReady(pi), podutil.IsReady(pj); ri != rj {
		return !ri
	}
	// 4. Lower deletion cost first.
	if ci, cj := deletionCost(pi), deletionCost(pj); ci != cj {
		return ci < cj
	}
	// 5. Doubled up (more related pods on the same node) first.
	if s.rank[i] != s.rank[j] {
		return s.rank[i] > s.rank[j]
	}
	// 6. Ready for less time first.
	if podutil.IsReady(pi) && podutil.IsReady(pj) {
		ti, tj := podutil.ReadyTime(pi), podutil.ReadyTime(pj)
		if !ti.Equal(tj) {
			return s.newerFirst(pi, pj, ti, tj)
		}
	}
	// 7. More container restarts first.
	if r, ok := compareRestarts(pi, pj); ok {
		return r
	}
	// 8. Newer first.
	ci, cj := pi.CreationTimestamp.Time, pj.CreationTimestamp.Time
	if !ci.Equal(cj) {
		return s.newerFirst(pi, pj, ci, cj)
	}
	return false
}

// newerFirst orders by time, newest first, a zero time before any other;
// times are compared by the log2 of their age, ties broken by UID.
func (s rankedPods) newerFirst(pi, pj *corev1.Pod, ti, tj time.Time) bool {
	if s.now.IsZero() || ti.IsZero() || tj.IsZero() {
		return afterOrZero(ti, tj)
	}
	if d := logRankDiff(ti, tj, s.now); d != 0 {
		return d < 0
	}
	return pi.UID < pj.UID
}

func afterOrZero(t1, t2 time.Time) bool {
	if t1.IsZero() || t2.IsZero() {
		return t1.IsZero()
	}
	return t1.After(t2)
}

// logRankDiff compares how long ago t1 and t2 were on a log2 scale of
// nanoseconds.
func logRankDiff(t1, t2, now time.Time) int64 {
	d1, d2 := now.Sub(t1), now.Sub(t2)
	r1, r2 := int64(-1), int64(-1)
	if d1 > 0 {
		r1 = int64(math.Log2(float64(d1)))
	}
	if d2 > 0 {
		r2 = int64(math.Log2(float64(d2)))
	}
	return r1 - r2
}

func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// compareRestarts orders by the most restarts of a regular container, then
// of a sidecar (restartable init container): more restarts first. ok is
// false on a tie.
func compareRestarts(pi, pj *corev1.Pod) (less, ok bool) {
	ri, si := maxRestarts(pi)
	rj, sj := maxRestarts(pj)
	if ri != rj {
		return ri > rj, true
	}
	if si != sj {
		return si > sj, true
	}
	return false, false
}

func maxRestarts(p *corev1.Pod) (regular, sidecar int32) {
	for _, c := range p.Status.ContainerStatuses {
		regular = max(regular, c.RestartCount)
	}
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, c := range p.Status.InitContainerStatuses {
		if sidecars[c.Name] {
			sidecar = max(sidecar, c.RestartCount)
		}
	}
	return regular, sidecar
}
