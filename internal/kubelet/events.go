package kubelet

import (
	corev1 "k8s.io/api/core/v1"
	"plainkube.dev/plainkube/internal/kubelet/events"
)

// statusEvents records the events a status change shows: a container
// entering a back-off or an error state. They are derived from the old
// and new statuses so that a state the agent reports on every sync is
// recorded once per change, not once per sync.
func (a *Agent) statusEvents(pod *corev1.Pod, old, cur corev1.PodStatus) {
	prev := map[string]corev1.ContainerStatus{}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), old.InitContainerStatuses...), old.ContainerStatuses...) {
		prev[cs.Name] = cs
	}
	if cur.Reason == reasonDeadlineExceeded && old.Reason != reasonDeadlineExceeded {
		a.events.Record(pod, "", corev1.EventTypeNormal, events.DeadlineExceeded, "%s", messageDeadlineExceeded)
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), cur.InitContainerStatuses...), cur.ContainerStatuses...) {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		p, had := prev[cs.Name]
		if had && p.State.Waiting != nil && p.State.Waiting.Reason == w.Reason && p.RestartCount == cs.RestartCount && p.State.Waiting.Message == w.Message {
			continue
		}
		switch w.Reason {
		case "CrashLoopBackOff":
			a.events.Record(pod, cs.Name, corev1.EventTypeWarning, events.BackOff, "Back-off restarting failed container %s in pod %s", cs.Name, events.PodDesc(pod))
		case "ImagePullBackOff":
			a.events.Record(pod, cs.Name, corev1.EventTypeNormal, events.BackOff, "Back-off pulling image %q", cs.Image)
			a.events.Record(pod, cs.Name, corev1.EventTypeWarning, events.Failed, "Error: %s", w.Reason)
		case "ErrImageNeverPull":
			a.events.Record(pod, cs.Name, corev1.EventTypeWarning, "ErrImageNeverPull", "%s", w.Message)
			a.events.Record(pod, cs.Name, corev1.EventTypeWarning, events.Failed, "Error: %s", w.Reason)
		case "ErrImagePull":
			a.events.Record(pod, cs.Name, corev1.EventTypeWarning, events.Failed, "Failed to pull image %q: %s", cs.Image, w.Message)
			a.events.Record(pod, cs.Name, corev1.EventTypeWarning, events.Failed, "Error: %s", w.Reason)
		case "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PostStartHookError":
			a.events.Record(pod, cs.Name, corev1.EventTypeWarning, events.Failed, "Error: %s", w.Message)
		}
	}
}
