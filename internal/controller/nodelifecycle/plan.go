package nodelifecycle

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Settings are the controller's tunables a plan reads (see Controller).
type Settings struct {
	GracePeriod, StartupGracePeriod time.Duration
	UnhealthyZoneThreshold          float64
	Rates                           rates
}

// State is what one reconcile of a node looks at: the node and its pods
// from the informer caches, and what the controller remembers of it.
type State struct {
	Node *corev1.Node
	Now  time.Time
	// Behind: the cache still shows a version of the node this
	// controller's own writes replaced; acting on it would repeat them.
	Behind bool
	// Probe is when the node last showed a sign of life (health.go).
	Probe time.Time
	// LastReady is the node's Ready status after the previous look.
	LastReady corev1.ConditionStatus
	// Marked are the pods this controller marked not ready since the node
	// last was Ready.
	Marked map[types.UID]bool
	// OtherNodes counts every other node by zone, ready or not (nodes kept
	// out of zone health are not counted).
	OtherNodes map[string]readyCounts
	// Bucket is the node's zone's token bucket for NoExecute taints, as
	// it is (a copy: the plan only looks).
	Bucket bucket
	// TaintStarts is when each NoExecute taint on the node (by key) began
	// to apply; a taint not in it applies from Now.
	TaintStarts map[string]time.Time
	// Pods are the pods on the node, but for those whose cached version
	// this controller's own writes replaced.
	Pods     []*corev1.Pod
	Settings Settings
}

// Plan is what one reconcile of a node writes, in this order: Status,
// the taints, the pods marked not ready, then the evictions.
type Plan struct {
	// Status, if set, is the node with its kubelet's conditions set to
	// Unknown: it stopped posting status for its grace period.
	Status *corev1.Node
	// Ready is the node's Ready status once the plan is written.
	Ready corev1.ConditionStatus
	// AllDisrupted: every zone is fully disrupted (with this node as
	// planned).
	AllDisrupted bool
	// Taints, if Added or Removed is not empty, are the node's new taints.
	Taints         []corev1.Taint
	Added, Removed []corev1.Taint
	// TakeToken: Added holds a NoExecute taint that takes a token of the
	// zone's bucket at TaintQPS; with none left by then (another node of
	// the zone took it) the pass is given up and looked at again.
	TakeToken bool
	TaintQPS  float64
	// MarkNotReady are pods whose Ready condition is set to False.
	MarkNotReady []*corev1.Pod
	// Evict are pods deleted for a NoExecute taint they do not tolerate
	// (or no longer do).
	Evict []*corev1.Pod
	// Result says when to look again: when the grace period would end,
	// a token comes, or a toleration runs out.
	Result reconcile.Result
}

// plan decides one reconcile of a node, as upstream's node lifecycle
// controller and taint manager: its health (Unknown once silent for the
// grace period), the zones' state, its taints, and its pods.
func plan(s State) Plan {
	if s.Behind {
		return Plan{Result: reconcile.Result{Requeue: true}}
	}
	now, node := s.Now, s.Node
	var p Plan
	var after []time.Duration

	// 1. Health.
	grace := s.Settings.GracePeriod
	if readyCondition(node) == nil {
		grace = s.Settings.StartupGracePeriod
	}
	if deadline := s.Probe.Add(grace); now.After(deadline) {
		silent := node.DeepCopy()
		if markUnknown(silent, now) {
			p.Status, node = silent, silent
		}
	} else {
		after = append(after, deadline.Sub(now)+time.Millisecond)
	}
	p.Ready = readyStatus(node)

	// 2. Zones, with this node as planned.
	byZone := make(map[string]readyCounts, len(s.OtherNodes)+1)
	for k, c := range s.OtherNodes {
		byZone[k] = c
	}
	if zone, ready, ok := counted(node); ok {
		addTo(byZone, zone, ready, 1)
	}
	zones, all := statesOf(byZone, s.Settings.UnhealthyZoneThreshold)
	p.AllDisrupted = all

	// 3. Taints.
	ch := decideTaints(node, all)
	if ch.noExecute != nil {
		z, ok := zones[zoneKey(node)]
		if !ok {
			z = zoneStats{state: StateNormal}
		}
		p.TaintQPS = taintQPS(z, s.Settings.Rates)
		b := s.Bucket
		took, wait := b.take(now, p.TaintQPS)
		switch {
		case took:
			ch.add = append(ch.add, *ch.noExecute)
			p.TakeToken = true
		case wait > 0:
			after = append(after, wait)
		default:
			after = append(after, retryPeriod)
		}
	}
	taints := node.Spec.Taints
	if len(ch.add)+len(ch.remove) > 0 {
		p.Added, p.Removed = ch.add, ch.remove
		p.Taints = applyTaints(node.Spec.Taints, ch.add, ch.remove, now)
		taints = p.Taints
	}

	// 4. Pods. A silent node's pods are not ready whatever they last said;
	// a node that reports NotReady gets its pods marked once, on the
	// transition (its kubelet manages them afterwards). A pod already
	// marked since the node was last Ready is not marked again: if it says
	// Ready again, its kubelet wrote that, and rewriting it would only
	// start a tug of war.
	if p.Ready == corev1.ConditionUnknown || (p.Ready == corev1.ConditionFalse && s.LastReady == corev1.ConditionTrue) {
		for _, pod := range s.Pods {
			if r := podReady(pod); r != "" && r != corev1.ConditionFalse && !s.Marked[pod.UID] {
				p.MarkNotReady = append(p.MarkNotReady, pod)
			}
		}
	}
	start := func(t corev1.Taint) time.Time {
		if at, ok := s.TaintStarts[t.Key]; ok {
			return at
		}
		return now
	}
	for _, pod := range s.Pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		at, evict := evictionTime(pod, taints, start)
		switch {
		case !evict:
		case now.Before(at):
			after = append(after, at.Sub(now)+time.Millisecond)
		default:
			p.Evict = append(p.Evict, pod)
		}
	}

	if len(after) > 0 {
		p.Result.RequeueAfter = slices.Min(after)
	}
	return p
}
