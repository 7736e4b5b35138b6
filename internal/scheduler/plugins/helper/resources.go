package helper

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// ResourceSpec names a resource a score considers, with its weight.
type ResourceSpec struct {
	Name   v1.ResourceName `json:"name"`
	Weight int64           `json:"weight,omitempty"`
}

// DefaultResources is CPU and memory, weight 1 each.
var DefaultResources = []ResourceSpec{{Name: v1.ResourceCPU, Weight: 1}, {Name: v1.ResourceMemory, Weight: 1}}

// PodRequestList returns the pod's request of each resource (CPU in
// millicores). Unless useRequested, containers without CPU or memory
// requests count with the non-zero defaults.
func PodRequestList(pod *v1.Pod, resources []ResourceSpec, useRequested bool) []int64 {
	req := framework.PodRequests(pod, !useRequested)
	out := make([]int64, len(resources))
	for i, r := range resources {
		out[i] = req.Get(r.Name)
	}
	return out
}

// AllocatableRequested returns the node's allocatable amount of a resource
// and what would be requested with the pod there. With useRequested the
// node's actual requests are used, otherwise the non-zero ones for CPU and
// memory. A scalar resource the pod does not request, or the node does not
// have, returns (0, 0): it is left out of the score.
func AllocatableRequested(ni *framework.NodeInfo, name v1.ResourceName, podRequest int64, useRequested bool) (int64, int64) {
	requested := ni.NonZeroRequested
	if useRequested {
		requested = ni.Requested
	}
	if podRequest == 0 && framework.IsScalarResourceName(name) {
		return 0, 0
	}
	switch name {
	case v1.ResourceCPU:
		return ni.Allocatable.MilliCPU, requested.MilliCPU + podRequest
	case v1.ResourceMemory:
		return ni.Allocatable.Memory, requested.Memory + podRequest
	case v1.ResourceEphemeralStorage:
		return ni.Allocatable.EphemeralStorage, ni.Requested.EphemeralStorage + podRequest
	}
	if alloc, ok := ni.Allocatable.ScalarResources[name]; ok {
		return alloc, ni.Requested.ScalarResources[name] + podRequest
	}
	return 0, 0
}

// Score fills requested and allocatable per resource and hands them to
// scorer (resources with nothing allocatable are zero in both).
func Score(ni *framework.NodeInfo, podRequests []int64, resources []ResourceSpec, useRequested bool, scorer func(requested, allocatable []int64) int64) int64 {
	requested := make([]int64, len(resources))
	allocatable := make([]int64, len(resources))
	for i, r := range resources {
		alloc, req := AllocatableRequested(ni, r.Name, podRequests[i], useRequested)
		if alloc == 0 {
			continue
		}
		allocatable[i], requested[i] = alloc, req
	}
	return scorer(requested, allocatable)
}

// CountPodsMatchSelector counts the pods in namespace ns, not being
// deleted, whose labels match selector (an empty selector matches none).
func CountPodsMatchSelector(pods []*framework.PodInfo, selector labels.Selector, ns string) int {
	if selector.Empty() {
		return 0
	}
	n := 0
	for _, p := range pods {
		if p.Pod.DeletionTimestamp != nil || p.Pod.Namespace != ns {
			continue
		}
		if selector.Matches(labels.Set(p.Pod.Labels)) {
			n++
		}
	}
	return n
}
