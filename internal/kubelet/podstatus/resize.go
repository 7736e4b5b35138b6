package podstatus

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DeferredResizeRetry is how soon a node agent tries a deferred in-place
// resize again, for room another pod's end may have made.
const DeferredResizeRetry = 3 * time.Second

// ResizeDeferred is nil when a pod's requests fit the node's allocatable
// cpu and memory besides what its other pods use, and otherwise upstream's
// Deferred PodResizePending condition naming the first that does not fit
// (cpu in millicores). A resource the node does not report always fits.
func ResizeDeferred(requests, used, allocatable corev1.ResourceList) *corev1.PodCondition {
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		capacity, ok := allocatable[n]
		if !ok {
			continue
		}
		r, u := requests[n], used[n]
		total := r.DeepCopy()
		total.Add(u)
		if total.Cmp(capacity) <= 0 {
			continue
		}
		value := func(q resource.Quantity) int64 { return q.Value() }
		if n == corev1.ResourceCPU {
			value = func(q resource.Quantity) int64 { return q.MilliValue() }
		}
		return &corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred,
			Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", n, value(r), value(u), value(capacity))}
	}
	return nil
}

// SetAllocation reports in cs a container's allocation: allocatedResources
// are the allocated requests (nil when none), and resources what the
// container runs with (running; nil: the allocation).
func SetAllocation(cs *corev1.ContainerStatus, allocated corev1.ResourceRequirements, running *corev1.ResourceRequirements) {
	cs.AllocatedResources = nil
	if len(allocated.Requests) > 0 {
		cs.AllocatedResources = allocated.Requests.DeepCopy()
	}
	if running == nil {
		running = &allocated
	}
	cs.Resources = running.DeepCopy()
}
