package nodelifecycle

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionTaints maps node conditions to the taints they imply, as
// upstream's nodeConditionToTaintKeyStatusMap.
var conditionTaints = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeReady: {
		corev1.ConditionFalse:   corev1.TaintNodeNotReady,
		corev1.ConditionUnknown: corev1.TaintNodeUnreachable,
	},
	corev1.NodeMemoryPressure:     {corev1.ConditionTrue: corev1.TaintNodeMemoryPressure},
	corev1.NodeDiskPressure:       {corev1.ConditionTrue: corev1.TaintNodeDiskPressure},
	corev1.NodeNetworkUnavailable: {corev1.ConditionTrue: corev1.TaintNodeNetworkUnavailable},
	corev1.NodePIDPressure:        {corev1.ConditionTrue: corev1.TaintNodePIDPressure},
}

// managedNoScheduleKeys are the NoSchedule taint keys this controller owns.
var managedNoScheduleKeys = []string{
	corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure,
	corev1.TaintNodeNetworkUnavailable, corev1.TaintNodePIDPressure, corev1.TaintNodeUnschedulable,
}

var (
	unreachableNoExecute = corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	notReadyNoExecute    = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
)

// taintChange is a change to a node's taints. NoExecute, when set, is a
// NoExecute taint to add that is subject to the zone's rate limit.
type taintChange struct {
	add, remove []corev1.Taint
	noExecute   *corev1.Taint
}

func (c taintChange) empty() bool { return len(c.add) == 0 && len(c.remove) == 0 && c.noExecute == nil }

func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	return slices.ContainsFunc(taints, func(x corev1.Taint) bool { return x.Key == t.Key && x.Effect == t.Effect })
}

// decideTaints says how the node's taints should change given its
// conditions, as upstream:
//
//   - NoSchedule taints follow the conditions (Ready False: not-ready,
//     Unknown: unreachable, memory/disk/PID pressure, network unavailable)
//     and spec.unschedulable;
//   - a NoExecute taint follows Ready (False: not-ready, Unknown:
//     unreachable, True: none); replacing one by the other happens at
//     once, adding one is rate limited (noExecute);
//   - while every zone is fully disrupted (the control plane most likely
//     lost the nodes, not the nodes their workloads), NoExecute taints are
//     removed and none is added.
func decideTaints(node *corev1.Node, allDisrupted bool) taintChange {
	var ch taintChange
	var want []corev1.Taint
	for _, cond := range node.Status.Conditions {
		if key, ok := conditionTaints[cond.Type][cond.Status]; ok {
			want = append(want, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	if node.Spec.Unschedulable {
		want = append(want, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	for _, t := range want {
		if !hasTaint(node.Spec.Taints, t) {
			ch.add = append(ch.add, t)
		}
	}
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule && slices.Contains(managedNoScheduleKeys, t.Key) && !hasTaint(want, t) {
			ch.remove = append(ch.remove, corev1.Taint{Key: t.Key, Effect: t.Effect})
		}
	}

	removeNoExecute := func(ts ...corev1.Taint) {
		for _, t := range ts {
			if hasTaint(node.Spec.Taints, t) {
				ch.remove = append(ch.remove, t)
			}
		}
	}
	if allDisrupted {
		removeNoExecute(unreachableNoExecute, notReadyNoExecute)
		return ch
	}
	var wantNE, opposite corev1.Taint
	switch readyStatus(node) {
	case corev1.ConditionFalse:
		wantNE, opposite = notReadyNoExecute, unreachableNoExecute
	case corev1.ConditionUnknown:
		wantNE, opposite = unreachableNoExecute, notReadyNoExecute
	case corev1.ConditionTrue:
		removeNoExecute(unreachableNoExecute, notReadyNoExecute)
		return ch
	default:
		return ch // no Ready condition yet: wait for one
	}
	switch {
	case hasTaint(node.Spec.Taints, wantNE):
		removeNoExecute(opposite)
	case hasTaint(node.Spec.Taints, opposite):
		ch.add = append(ch.add, wantNE)
		removeNoExecute(opposite)
	default:
		ch.noExecute = &wantNE
	}
	return ch
}

// applyTaints returns taints without those in remove and with those in add
// (stamped with now, as upstream stamps the taints it adds).
func applyTaints(taints []corev1.Taint, add, remove []corev1.Taint, now time.Time) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if !hasTaint(remove, t) {
			out = append(out, t)
		}
	}
	at := metav1.NewTime(now)
	for _, t := range add {
		if !hasTaint(out, t) {
			t.TimeAdded = &at
			out = append(out, t)
		}
	}
	return out
}

// tolerates reports whether a toleration tolerates a taint (the Lt/Gt
// operators, alpha upstream, tolerate nothing).
func tolerates(tol *corev1.Toleration, taint *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case "", corev1.TolerationOpEqual:
		return tol.Value == taint.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}

// evictionTime says when a pod on a node with these taints must be
// evicted, as upstream's taint manager: at once if some NoExecute taint is
// not tolerated; else, for each NoExecute taint, the taint's start plus the
// tolerationSeconds of the first toleration that matches it (none: never),
// the earliest of those. start gives when a taint began to apply.
func evictionTime(pod *corev1.Pod, taints []corev1.Taint, start func(corev1.Taint) time.Time) (at time.Time, evict bool) {
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		var match *corev1.Toleration
		for j := range pod.Spec.Tolerations {
			if tolerates(&pod.Spec.Tolerations[j], t) {
				match = &pod.Spec.Tolerations[j]
				break
			}
		}
		if match == nil {
			return time.Time{}, true
		}
		if match.TolerationSeconds == nil {
			continue
		}
		deadline := start(*t).Add(time.Duration(max(*match.TolerationSeconds, 0)) * time.Second)
		if !evict || deadline.Before(at) {
			at, evict = deadline, true
		}
	}
	return at, evict
}
