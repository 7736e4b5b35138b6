package sim

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestDecideResize: a simulated node reports a resize that fits at once
// (allocatedResources and resources), and one that does not as Deferred,
// keeping the allocation.
func TestDecideResize(t *testing.T) {
	pod, d := syncAt(t, testPod(), 0, 1500*time.Millisecond)
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	pod.Status = d.status
	d = decide(pod, podEnv{hostIP: "172.16.0.1"}, t0.Add(2*time.Second))
	cs := d.status.ContainerStatuses[0]
	if cs.AllocatedResources.Cpu().String() != "100m" || cs.Resources == nil || cs.Resources.Requests.Cpu().String() != "100m" {
		t.Fatalf("first report: allocated %v resources %v", cs.AllocatedResources, cs.Resources)
	}
	pod.Status = d.status
	pod.Generation++
	pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	d = decide(pod, podEnv{hostIP: "172.16.0.1", allocatable: allocatable}, t0.Add(3*time.Second))
	var pending *corev1.PodCondition
	for i, c := range d.status.Conditions {
		if c.Type == corev1.PodResizePending {
			pending = &d.status.Conditions[i]
		}
	}
	if pending == nil || pending.Reason != corev1.PodReasonDeferred || pending.Message != "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000" {
		t.Errorf("resize beyond the node's allocatable: %+v", pending)
	}
	if got := d.status.ContainerStatuses[0].AllocatedResources.Cpu().String(); got != "100m" {
		t.Errorf("deferred resize changed the allocation to %s", got)
	}
	if d.next.IsZero() {
		t.Errorf("a deferred resize is not retried")
	}
	allocatable[corev1.ResourceCPU] = resource.MustParse("4")
	pod.Status = d.status
	d = decide(pod, podEnv{hostIP: "172.16.0.1", allocatable: allocatable}, t0.Add(4*time.Second))
	for _, c := range d.status.Conditions {
		if c.Type == corev1.PodResizePending {
			t.Errorf("resize that fits still pending: %+v", c)
		}
	}
	if got := d.status.ContainerStatuses[0].AllocatedResources.Cpu().String(); got != "2" {
		t.Errorf("allocated cpu %s, want 2", got)
	}
}
