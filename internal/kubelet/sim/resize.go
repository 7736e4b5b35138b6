package sim

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"

	"plainkube.dev/plainkube/internal/kubelet/podstatus"
)

// used is what the other active pods of node n request of its cpu and
// memory, for a resize of pod.
func (s *Sim) used(n *simNode, pod *corev1.Pod) corev1.ResourceList {
	used := corev1.ResourceList{}
	all, err := s.pods.List(labels.Everything())
	if err != nil {
		return used
	}
	for _, o := range all {
		if o.UID == pod.UID || o.Spec.NodeName != n.name || terminal(o.Status.Phase) {
			continue
		}
		// A pod counts with what it was allocated, as its status says.
		counted := o
		if len(o.Status.ContainerStatuses) > 0 {
			counted = o.DeepCopy()
			for i := range counted.Spec.Containers {
				for _, cs := range o.Status.ContainerStatuses {
					if cs.Name == counted.Spec.Containers[i].Name && cs.AllocatedResources != nil {
						counted.Spec.Containers[i].Resources.Requests = cs.AllocatedResources
					}
				}
			}
		}
		for name, q := range resourcehelper.PodRequests(counted, resourcehelper.PodResourcesOptions{}) {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
				v := used[name]
				v.Add(q)
				used[name] = v
			}
		}
	}
	return used
}

// resize reports a simulated node's in-place resize of pod: a resize whose
// requests fit the node's allocatable besides what its other pods use
// (allocatable nil: any fits) is allocated and actuated at once
// (containers' allocatedResources and resources); one that does not waits
// with upstream's Deferred PodResizePending condition, as on a real node
// (podstatus.ResizeDeferred). It reports whether the resize waits.
func resize(pod *corev1.Pod, st *corev1.PodStatus, allocatable, used corev1.ResourceList, now time.Time) (deferred bool) {
	if resizeOutstanding(pod, st) && allocatable != nil {
		req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		if c := podstatus.ResizeDeferred(req, used, allocatable); c != nil {
			c.ObservedGeneration = pod.Generation
			podstatus.SetCondition(st, *c, now)
			return true
		}
	}
	for i := range st.ContainerStatuses {
		if c := containerNamed(pod.Spec.Containers, st.ContainerStatuses[i].Name); c != nil {
			podstatus.SetAllocation(&st.ContainerStatuses[i], c.Resources, nil)
		}
	}
	for i := range st.InitContainerStatuses {
		if c := containerNamed(pod.Spec.InitContainers, st.InitContainerStatuses[i].Name); c != nil {
			podstatus.SetAllocation(&st.InitContainerStatuses[i], c.Resources, nil)
		}
	}
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress
	})
	return false
}

// resizeOutstanding reports whether a container's reported resources
// differ from its spec's.
func resizeOutstanding(pod *corev1.Pod, st *corev1.PodStatus) bool {
	for _, cs := range st.ContainerStatuses {
		if c := containerNamed(pod.Spec.Containers, cs.Name); c != nil && cs.Resources != nil && !equality.Semantic.DeepEqual(*cs.Resources, c.Resources) {
			return true
		}
	}
	return false
}
