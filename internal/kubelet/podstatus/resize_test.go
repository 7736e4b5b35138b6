package podstatus

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestResizeDeferred: a resize fits when its requests and the other pods'
// use are within the node's allocatable; otherwise the Deferred condition
// names the first resource short, cpu in millicores and memory in bytes.
func TestResizeDeferred(t *testing.T) {
	list := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	allocatable := list("2", "1Gi")
	if c := ResizeDeferred(list("1", "512Mi"), list("1", "512Mi"), allocatable); c != nil {
		t.Errorf("a resize that exactly fills the node: %+v", c)
	}
	if c := ResizeDeferred(list("1", "512Mi"), nil, corev1.ResourceList{}); c != nil {
		t.Errorf("a node that reports no cpu or memory deferred a resize: %+v", c)
	}
	for _, tc := range []struct {
		requests, used corev1.ResourceList
		want           string
	}{
		{list("1500m", "1Mi"), list("1", "1Mi"), "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"},
		{list("1", "1Gi"), list("1", "1Mi"), "Node didn't have enough resource: memory, requested: 1073741824, used: 1048576, capacity: 1073741824"},
	} {
		c := ResizeDeferred(tc.requests, tc.used, allocatable)
		if c == nil || c.Type != corev1.PodResizePending || c.Status != corev1.ConditionTrue || c.Reason != corev1.PodReasonDeferred || c.Message != tc.want {
			t.Errorf("requests %v used %v: %+v, want %q", tc.requests, tc.used, c, tc.want)
		}
	}
}

// TestSetAllocation: allocatedResources are the allocated requests (nil
// without any), resources what the container runs with or else the
// allocation, copied.
func TestSetAllocation(t *testing.T) {
	allocated := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}
	var cs corev1.ContainerStatus
	SetAllocation(&cs, allocated, nil)
	if cs.AllocatedResources.Cpu().String() != "100m" || cs.Resources == nil || cs.Resources.Limits.Cpu().String() != "200m" {
		t.Fatalf("allocation reported as %v, %v", cs.AllocatedResources, cs.Resources)
	}
	allocated.Requests[corev1.ResourceCPU] = resource.MustParse("1")
	if cs.AllocatedResources.Cpu().String() != "100m" || cs.Resources.Requests.Cpu().String() != "100m" {
		t.Errorf("the status shares the allocation's lists")
	}
	running := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")}}
	SetAllocation(&cs, corev1.ResourceRequirements{}, &running)
	if cs.AllocatedResources != nil || cs.Resources.Limits.Cpu().String() != "300m" {
		t.Errorf("no requests, running 300m: allocated %v resources %v", cs.AllocatedResources, cs.Resources)
	}
}
