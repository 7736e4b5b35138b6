package sim

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"

	"plainkube.dev/plainkube/internal/kubelet/podstatus"
)

// deferredResizeRetry is how soon a deferred resize is tried again.
const deferredResizeRetry = 3 * time.Second

// room is what node n's allocatable cpu and memory leave besides the
// requests of its other active pods, for a resize of pod.
func (s *Sim) room(n *simNode, pod *corev1.Pod) corev1.ResourceList {
	left := corev1.ResourceList{corev1.ResourceCPU: s.opts.CPU.DeepCopy(), corev1.ResourceMemory: s.opts.Memory.DeepCopy()}
	all, err := s.pods.List(labels.Everything())
	if err != nil {
		return left
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
			if v, ok := left[name]; ok {
				v.Sub(q)
				left[name] = v
			}
		}
	}
	return left
}

// resize reports a simulated node's in-place resize of pod: a resize whose
// requests fit the room the node leaves (nil: any) is allocated and
// actuated at once (containers' allocatedResources and resources); one that
// does not waits with upstream's Deferred PodResizePending condition.
// It reports whether the resize waits.
func resize(pod *corev1.Pod, st *corev1.PodStatus, room corev1.ResourceList, now time.Time) (deferred bool) {
	if resizeOutstanding(pod, st) && room != nil {
		req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			capacity, ok := room[n]
			r := req[n]
			if !ok || r.Cmp(capacity) <= 0 {
				continue
			}
			value := func(q resource.Quantity) int64 { return q.Value() }
			if n == corev1.ResourceCPU {
				value = func(q resource.Quantity) int64 { return q.MilliValue() }
			}
			podstatus.SetCondition(st, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue,
				Reason: corev1.PodReasonDeferred, ObservedGeneration: pod.Generation,
				Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, capacity: %d", n, value(r), value(capacity))}, now)
			return true
		}
	}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		c := containerNamed(pod.Spec.Containers, cs.Name)
		if c == nil {
			continue
		}
		cs.Resources = c.Resources.DeepCopy()
		cs.AllocatedResources = nil
		if len(c.Resources.Requests) > 0 {
			cs.AllocatedResources = c.Resources.Requests.DeepCopy()
		}
	}
	for i := range st.InitContainerStatuses {
		cs := &st.InitContainerStatuses[i]
		if c := containerNamed(pod.Spec.InitContainers, cs.Name); c != nil {
			cs.Resources = c.Resources.DeepCopy()
			cs.AllocatedResources = nil
			if len(c.Resources.Requests) > 0 {
				cs.AllocatedResources = c.Resources.Requests.DeepCopy()
			}
		}
	}
	var kept []corev1.PodCondition
	for _, c := range st.Conditions {
		if c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress {
			kept = append(kept, c)
		}
	}
	st.Conditions = kept
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
