package events

import (
	"context"
	"fmt"

	"plainkube.dev/plainkube/internal/reconcile"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// Event reasons, upstream's.
const (
	Pulled                 = "Pulled"
	Created                = "Created"
	Started                = "Started"
	Killing                = "Killing"
	Unhealthy              = "Unhealthy"
	BackOff                = "BackOff"
	Failed                 = "Failed"
	FailedPostStartHook    = "FailedPostStartHook"
	FailedPreStopHook      = "FailedPreStopHook"
	FailedCreatePodSandBox = "FailedCreatePodSandBox"
	DeadlineExceeded       = "DeadlineExceeded"
	MissingClusterDNS      = "MissingClusterDNS"
)

// Recorder records the agent's events. A nil Recorder records nothing.
type Recorder struct{ r record.EventRecorder }

// Start starts recording events through cs as component "kubelet" on
// host nodeName; it stops when ctx ends.
func Start(ctx context.Context, cs kubernetes.Interface, nodeName string) *Recorder {
	r, stop := reconcile.NodeEventRecorder(ctx, cs, "kubelet", nodeName)
	go func() { <-ctx.Done(); stop() }()
	return &Recorder{r}
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

// Record records an event about pod (container "") or one of its
// containers. It never blocks or fails.
func (r *Recorder) Record(pod *corev1.Pod, container, typ, reason, format string, args ...any) {
	if r == nil {
		return
	}
	r.r.Eventf(podRef(pod, container), typ, reason, format, args...)
}

// PodDesc is a pod as upstream's messages name it: name_namespace(uid).
func PodDesc(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
