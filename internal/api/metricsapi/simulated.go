package metricsapi

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The usage a pod on a simulated node declares, per container: the
// annotation AnnotationCPUUsage (or AnnotationMemoryUsage) is the usage of
// each of the pod's running containers, and the same key with "." and a
// container's name appended (sim.plainkube.dev/cpu-usage.sidecar) is that
// container's own, overriding it. Values are quantities ("800m", "64Mi");
// a container with neither uses nothing.
const (
	AnnotationCPUUsage    = "sim.plainkube.dev/cpu-usage"
	AnnotationMemoryUsage = "sim.plainkube.dev/memory-usage"
)

// SimulatedUsage is the usage of pod's running containers (as its status
// reports them: containers and restartable init containers whose state is
// Running), read from its annotations, sorted by name as metrics-server
// sorts them. ok is false if no container runs. A value that does not
// parse is an error naming the annotation.
func SimulatedUsage(pod *corev1.Pod) (containers []ContainerMetrics, ok bool, err error) {
	running := map[string]bool{}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.State.Running != nil {
				running[cs.Name] = true
			}
		}
	}
	if len(running) == 0 {
		return nil, false, nil
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if !running[c.Name] {
			continue
		}
		cpu, err := declared(pod.Annotations, AnnotationCPUUsage, c.Name)
		if err != nil {
			return nil, false, err
		}
		mem, err := declared(pod.Annotations, AnnotationMemoryUsage, c.Name)
		if err != nil {
			return nil, false, err
		}
		mem.Format = resource.BinarySI
		containers = append(containers, ContainerMetrics{Name: c.Name, Usage: corev1.ResourceList{
			corev1.ResourceCPU:    cpu,
			corev1.ResourceMemory: mem,
		}})
	}
	if len(containers) == 0 {
		return nil, false, nil
	}
	slices.SortFunc(containers, func(a, b ContainerMetrics) int { return strings.Compare(a.Name, b.Name) })
	return containers, true, nil
}

// declared is container's value of annotation key: its own, else the
// pod's, else zero.
func declared(ann map[string]string, key, container string) (resource.Quantity, error) {
	k := key + "." + container
	v, ok := ann[k]
	if !ok {
		k = key
		v, ok = ann[k]
	}
	if !ok {
		return resource.Quantity{}, nil
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(v))
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("annotation %s: %q is not a quantity", k, v)
	}
	if q.Sign() < 0 {
		return resource.Quantity{}, fmt.Errorf("annotation %s: %q is negative", k, v)
	}
	return q, nil
}
