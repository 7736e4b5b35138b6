package replicaset

import (
	"slices"
	"time"

	"plainkube.dev/plainkube/internal/api/podutil"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ReplicaFailure is the condition type set while creating or deleting pods
// fails; its reason is FailedCreate or FailedDelete.
const ReplicaFailure = "ReplicaFailure"

// calculateStatus is the status of w given its active claimed pods, its
// terminating pods (nil for a kind without terminatingReplicas), and the
// error of this pass's creates or deletes.
func calculateStatus(w *workload, active, terminating []*corev1.Pod, tracksTerminating bool, manageErr error, now time.Time) status {
	st := w.status
	st.Conditions = slices.Clone(w.status.Conditions)
	var template labels.Selector = labels.Everything()
	if w.template != nil {
		template = labels.SelectorFromValidatedSet(labels.Set(w.template.Labels))
	}
	var fully, ready, available int32
	for _, p := range active {
		if template.Matches(labels.Set(p.Labels)) {
			fully++
		}
		if podutil.IsReady(p) {
			ready++
			if podutil.IsAvailable(p, w.minReadySeconds, now) {
				available++
			}
		}
	}
	failure := getCondition(st.Conditions, ReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		reason := ""
		if diff := len(active) - int(w.replicas); diff < 0 {
			reason = "FailedCreate"
		} else if diff > 0 {
			reason = "FailedDelete"
		}
		st.Conditions = setCondition(st.Conditions, condition{Type: ReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error()})
	case manageErr == nil && failure != nil:
		st.Conditions = removeCondition(st.Conditions, ReplicaFailure)
	}
	st.Replicas = int32(len(active))
	st.FullyLabeledReplicas = fully
	st.ReadyReplicas = ready
	st.AvailableReplicas = available
	st.TerminatingReplicas = nil
	if tracksTerminating {
		n := int32(len(terminating))
		st.TerminatingReplicas = &n
	}
	return st
}

// statusUnchanged reports whether writing st over w's status would change
// nothing (the generation is observed and the counts and conditions are
// the same).
func statusUnchanged(w *workload, st status) bool {
	old := w.status
	return old.Replicas == st.Replicas && old.FullyLabeledReplicas == st.FullyLabeledReplicas &&
		old.ReadyReplicas == st.ReadyReplicas && old.AvailableReplicas == st.AvailableReplicas &&
		equalPtr(old.TerminatingReplicas, st.TerminatingReplicas) &&
		w.obj.GetGeneration() == old.ObservedGeneration && conditionsEqual(old.Conditions, st.Conditions)
}

func equalPtr(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func conditionsEqual(a, b []condition) bool {
	return slices.EqualFunc(a, b, func(x, y condition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message &&
			x.LastTransitionTime.Equal(&y.LastTransitionTime)
	})
}

func getCondition(cs []condition, t string) *condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// setCondition adds c, replacing a condition of its type unless that one
// has the same status and reason.
func setCondition(cs []condition, c condition) []condition {
	if cur := getCondition(cs, c.Type); cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return cs
	}
	return append(removeCondition(cs, c.Type), c)
}

func removeCondition(cs []condition, t string) []condition {
	return slices.DeleteFunc(slices.Clone(cs), func(c condition) bool { return c.Type == t })
}
