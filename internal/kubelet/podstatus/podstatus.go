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

// Terminate makes st the status of a pod that has stopped for good (it was
// deleted and its containers stopped), as upstream kubelet's: a container
// still shown running or waiting is terminated with reason
// ContainerStatusUnknown and exit code 137, and the phase is Succeeded if
// every container exited 0, else Failed.
func Terminate(st *corev1.PodStatus) {
	if st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed {
		return
	}
	succeeded := true
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			cs := &list[i]
			if cs.State.Terminated == nil {
				cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137,
					Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was terminated"}}
				cs.Ready = false
				if cs.Started != nil {
					cs.Started = new(bool)
				}
			}
		}
	}
	for _, cs := range st.ContainerStatuses {
		succeeded = succeeded && cs.State.Terminated.ExitCode == 0
	}
	if succeeded && len(st.ContainerStatuses) > 0 {
		st.Phase = corev1.PodSucceeded
	} else {
		st.Phase = corev1.PodFailed
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
