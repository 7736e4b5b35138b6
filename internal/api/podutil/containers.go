package podutil

import corev1 "k8s.io/api/core/v1"

// Container is the init or other container of pod called name, or nil.
func Container(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// IsSidecar reports whether c, an init container, is a sidecar: one with
// restartPolicy Always, which runs beside the pod's containers.
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
