package podutil

import corev1 "k8s.io/api/core/v1"

// Container is the init, regular or ephemeral container of pod called
// name, or nil.
func Container(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return Ephemeral(&pod.Spec.EphemeralContainers[i])
		}
	}
	return nil
}

// Ephemeral is ephemeral container ec as a Container (the same fields;
// those an ephemeral container may not set are empty).
func Ephemeral(ec *corev1.EphemeralContainer) *corev1.Container {
	return (*corev1.Container)(&ec.EphemeralContainerCommon)
}

// IsSidecar reports whether c, an init container, is a sidecar: one with
// restartPolicy Always, which runs beside the pod's containers.
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
