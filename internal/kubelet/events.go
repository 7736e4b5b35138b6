package kubelet

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Events. The agent records upstream's kubelet events (source component
// "kubelet", host the node's name) through the API server: Pulled,
// Created, Started, Killing, Unhealthy, BackOff, Failed,
// FailedPostStartHook, FailedPreStopHook, FailedCreatePodSandBox,
// DeadlineExceeded. Events about one container refer to the pod with the
// container's field path (spec.containers{name}), as upstream's do.

// Event reasons, upstream's.
const (
	evPulled                 = "Pulled"
	evCreated                = "Created"
	evStarted                = "Started"
	evKilling                = "Killing"
	evUnhealthy              = "Unhealthy"
	evBackOff                = "BackOff"
	evFailed                 = "Failed"
	evFailedPostStartHook    = "FailedPostStartHook"
	evFailedPreStopHook      = "FailedPreStopHook"
	evFailedCreatePodSandBox = "FailedCreatePodSandBox"
	evDeadlineExceeded       = "DeadlineExceeded"
	evMissingClusterDNS      = "MissingClusterDNS"
)

// startRecorder starts the agent's event recorder; it stops when ctx ends.
func (a *Agent) startRecorder(ctx context.Context) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: a.cs.CoreV1().Events("")})
	a.recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: a.opts.NodeName})
	go func() { <-ctx.Done(); b.Shutdown() }()
}

// podRef refers to pod, or to one of its containers when container is
// not "".
func podRef(pod *corev1.Pod, container string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion}
	if container == "" {
		return ref
	}
	field := "spec.containers{%s}"
	for _, c := range pod.Spec.InitContainers {
		if c.Name == container {
			field = "spec.initContainers{%s}"
		}
	}
	ref.FieldPath = fmt.Sprintf(field, container)
	return ref
}

// event records an event about pod (container "") or one of its
// containers. It never blocks or fails.
func (a *Agent) event(pod *corev1.Pod, container, typ, reason, format string, args ...any) {
	if a.recorder == nil {
		return
	}
	a.recorder.Eventf(podRef(pod, container), typ, reason, format, args...)
}

// podDesc is a pod as upstream's messages name it: name_namespace(uid).
func podDesc(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

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
		a.event(pod, "", corev1.EventTypeNormal, evDeadlineExceeded, "%s", messageDeadlineExceeded)
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
			a.event(pod, cs.Name, corev1.EventTypeWarning, evBackOff, "Back-off restarting failed container %s in pod %s", cs.Name, podDesc(pod))
		case "ImagePullBackOff":
			a.event(pod, cs.Name, corev1.EventTypeNormal, evBackOff, "Back-off pulling image %q", cs.Image)
			a.event(pod, cs.Name, corev1.EventTypeWarning, evFailed, "Error: %s", w.Reason)
		case "ErrImageNeverPull":
			a.event(pod, cs.Name, corev1.EventTypeWarning, "ErrImageNeverPull", "%s", w.Message)
			a.event(pod, cs.Name, corev1.EventTypeWarning, evFailed, "Error: %s", w.Reason)
		case "ErrImagePull":
			a.event(pod, cs.Name, corev1.EventTypeWarning, evFailed, "Failed to pull image %q: %s", cs.Image, w.Message)
			a.event(pod, cs.Name, corev1.EventTypeWarning, evFailed, "Error: %s", w.Reason)
		case "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PostStartHookError":
			a.event(pod, cs.Name, corev1.EventTypeWarning, evFailed, "Error: %s", w.Message)
		}
	}
}
