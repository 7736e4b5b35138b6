package podgc

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"plainkube.dev/plainkube/internal/api/nodeutil"

	corev1 "k8s.io/api/core/v1"
)

// State is what a pass knows.
type State struct {
	Pods []*corev1.Pod
	// Nodes are the nodes in the cache, by name.
	Nodes map[string]*corev1.Node
	// MissingSince is when each node that pods are bound to was first seen
	// missing from the cache (the quarantine state of the previous pass).
	MissingSince map[string]time.Time
	Now          time.Time
	Quarantine   time.Duration
	// TerminatedThreshold is how many terminated pods are kept; 0 or less
	// keeps them all.
	TerminatedThreshold int
}

// Plan is what a pass should do. A pod appears in at most one list.
type Plan struct {
	// Terminated are the terminated pods beyond the threshold.
	Terminated []*corev1.Pod
	// TerminatingOutOfService are terminating pods on out-of-service nodes.
	TerminatingOutOfService []*corev1.Pod
	// UnscheduledTerminating are terminating pods bound to no node.
	UnscheduledTerminating []*corev1.Pod
	// Orphaned are the pods of each node whose quarantine is over; the
	// node must be confirmed gone (GET) before they are deleted.
	Orphaned map[string][]*corev1.Pod
	// MissingSince is the quarantine state for the next pass.
	MissingSince map[string]time.Time
	// NextQuarantineEnd is when the earliest running quarantine ends
	// (zero if none runs).
	NextQuarantineEnd time.Time
}

// plan decides a pass.
func plan(in State) Plan {
	d := Plan{MissingSince: map[string]time.Time{}, Orphaned: map[string][]*corev1.Pod{}}
	taken := map[*corev1.Pod]bool{}

	// Orphans, after quarantine.
	for _, pod := range in.Pods {
		node := pod.Spec.NodeName
		if node == "" || in.Nodes[node] != nil {
			continue
		}
		since, ok := in.MissingSince[node]
		if !ok {
			since = in.Now
		}
		d.MissingSince[node] = since
		if !in.Now.Before(since.Add(in.Quarantine)) {
			d.Orphaned[node] = append(d.Orphaned[node], pod)
			taken[pod] = true
		} else if end := since.Add(in.Quarantine); d.NextQuarantineEnd.IsZero() || end.Before(d.NextQuarantineEnd) {
			d.NextQuarantineEnd = end
		}
	}
	for _, node := range slices.Collect(maps.Keys(d.Orphaned)) {
		sortPods(d.Orphaned[node])
	}

	for _, pod := range in.Pods {
		if taken[pod] || pod.DeletionTimestamp == nil {
			continue
		}
		if pod.Spec.NodeName == "" {
			d.UnscheduledTerminating = append(d.UnscheduledTerminating, pod)
			taken[pod] = true
			continue
		}
		if node := in.Nodes[pod.Spec.NodeName]; node != nil && !nodeutil.IsReady(node) && hasTaintKey(node, corev1.TaintNodeOutOfService) {
			d.TerminatingOutOfService = append(d.TerminatingOutOfService, pod)
			taken[pod] = true
		}
	}
	sortPods(d.UnscheduledTerminating)
	sortPods(d.TerminatingOutOfService)

	if in.TerminatedThreshold > 0 {
		var terminated []*corev1.Pod
		for _, pod := range in.Pods {
			if isTerminated(pod) {
				terminated = append(terminated, pod)
			}
		}
		if n := len(terminated) - in.TerminatedThreshold; n > 0 {
			sortPods(terminated)
			for _, pod := range terminated {
				if n == 0 {
					break
				}
				n--
				if !taken[pod] {
					d.Terminated = append(d.Terminated, pod)
					taken[pod] = true
				}
			}
		}
	}
	return d
}

// isTerminated: the pod's phase is final (Succeeded or Failed).
func isTerminated(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodPending, corev1.PodRunning, corev1.PodUnknown:
		return false
	}
	return true
}

func hasTaintKey(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// isEvicted: the kubelet evicted it (Failed, reason Evicted).
func isEvicted(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed && pod.Status.Reason == "Evicted"
}

// sortPods orders pods as upstream deletes them: evicted first, then by
// creation time, then by name.
func sortPods(pods []*corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		if ea, eb := isEvicted(a), isEvicted(b); ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}
