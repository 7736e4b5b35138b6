package podstatus

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is upstream kubelet's phase of a pod whose init containers are done
// and which is not being deleted, from its containers' statuses.
func Phase(pod *corev1.Pod, statuses []corev1.ContainerStatus) corev1.PodPhase {
	var running, waiting, stopped, succeeded int
	for _, cs := range statuses {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped == 0:
		return corev1.PodPending
	case pod.Spec.RestartPolicy == corev1.RestartPolicyAlways:
		return corev1.PodRunning
	case stopped == succeeded:
		return corev1.PodSucceeded
	case pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure:
		return corev1.PodRunning
	default:
		return corev1.PodFailed
	}
}

// SetCondition replaces st's condition of c's type with c, or appends c,
// keeping the transition time unless the status changes.
func SetCondition(st *corev1.PodStatus, c corev1.PodCondition, now time.Time) {
	for i := range st.Conditions {
		old := &st.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		c.LastProbeTime = old.LastProbeTime
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status || old.LastTransitionTime.IsZero() {
			c.LastTransitionTime = Stamp(now)
		}
		*old = c
		return
	}
	c.LastTransitionTime = Stamp(now)
	st.Conditions = append(st.Conditions, c)
}

// Stamp is t as the API stores it: to the second (zero stays zero).
func Stamp(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t.Truncate(time.Second))
}
