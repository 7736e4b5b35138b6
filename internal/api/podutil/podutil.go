package podutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// IsTerminal reports whether the pod has finished: Succeeded or Failed.
func IsTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// IsActive reports whether the pod counts towards its owner's replicas:
// not finished and not being deleted.
func IsActive(p *corev1.Pod) bool { return !IsTerminal(p) && p.DeletionTimestamp == nil }

// IsTerminating reports whether the pod is being deleted and has not
// finished yet.
func IsTerminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil && !IsTerminal(p) }

// ReadyCondition is the pod's Ready condition, or nil.
func ReadyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady reports whether the pod's Ready condition is True.
func IsReady(p *corev1.Pod) bool {
	c := ReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// ReadyTime is when the pod last became ready, or the zero time if it is
// not ready.
func ReadyTime(p *corev1.Pod) time.Time {
	if c := ReadyCondition(p); c != nil && c.Status == corev1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// IsAvailable reports whether the pod has been ready for longer than
// minReadySeconds at now (ready is enough when minReadySeconds is 0).
func IsAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := ReadyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	d := time.Duration(minReadySeconds) * time.Second
	return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(d).Before(now)
}
