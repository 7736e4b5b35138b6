package kubelet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/kubelet"
	"plainkube.dev/plainkube/internal/kubelet/containerd"
	"plainkube.dev/plainkube/internal/kubelet/network"
)

// cgroupLimits reads, inside container id, its cpu quota and memory
// limit from its cgroup: cpu.max and memory.max on cgroup v2, or
// cpu.cfs_quota_us and memory.limit_in_bytes on v1.
func cgroupLimits(t *testing.T, rt *containerd.Process, id string) (cpu, memory string) {
	t.Helper()
	script := `if [ -f /sys/fs/cgroup/cpu.max ]; then busybox cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max; ` +
		`else busybox cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/memory/memory.limit_in_bytes; fi`
	out, errOut, err := rt.Runtime.ExecSync(context.Background(), id, []string{"busybox", "sh", "-c", script}, 10*time.Second)
	if err != nil {
		t.Fatalf("exec in %s: %v (%s)", id, err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("cgroup values: %q", out)
	}
	return strings.TrimSpace(lines[0]), strings.TrimSpace(lines[1])
}

// TestInPlaceResize resizes a running container's cpu and memory
// through pods/resize: the node updates its cgroup (read inside the
// container) without restarting it, and reports the new resources in
// the container's status, while a container whose policy asks for a
// restart restarts with its new memory limit; a resize beyond what the
// node has left waits as Deferred until room is made.
func TestInPlaceResize(t *testing.T) {
	var rt *containerd.Process
	cs, _ := startNodeWith(t, network.DefaultPodCIDR, func(o *kubelet.Options) { rt = o.Runtime })
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	res := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	pod := busyboxPod("resized", corev1.RestartPolicyAlways, "exec busybox sleep 3600")
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: res("100m", "32Mi"), Limits: res("200m", "64Mi")}
	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
	}
	restarter := pod.Spec.Containers[0]
	restarter.Name = "restarter"
	restarter.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	pod.Spec.Containers = append(pod.Spec.Containers, restarter)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *corev1.Pod
	waitFor(t, time.Minute, "pod running", func(ctx context.Context) (bool, error) {
		p, err := getPod(ctx, cs, "resized")
		if err != nil || len(p.Status.ContainerStatuses) != 2 || p.Status.ContainerStatuses[0].State.Running == nil || p.Status.ContainerStatuses[1].State.Running == nil {
			return false, nil
		}
		running = p
		return true, nil
	})
	st := running.Status.ContainerStatuses[0]
	id := strings.TrimPrefix(st.ContainerID, "containerd://")
	if st.Resources == nil || st.Resources.Limits.Cpu().String() != "200m" || st.AllocatedResources.Memory().String() != "32Mi" {
		t.Errorf("status before the resize: resources %v allocated %v", st.Resources, st.AllocatedResources)
	}
	cpu, mem := cgroupLimits(t, rt, id)
	if !strings.HasPrefix(cpu, "20000") || mem != "67108864" {
		t.Errorf("cgroup before the resize: cpu %q memory %q", cpu, mem)
	}

	// Up cpu and memory, in place.
	// The restarter's memory policy restarts it.
	patch := `{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"150m","memory":"48Mi"},"limits":{"cpu":"300m","memory":"96Mi"}}},` +
		`{"name":"restarter","resources":{"limits":{"memory":"80Mi"}}}]}}`
	resized, err := pods.Patch(ctx, "resized", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	waitResized := func(gen int64) *corev1.Pod {
		t.Helper()
		var done *corev1.Pod
		waitFor(t, time.Minute, "resize done", func(ctx context.Context) (bool, error) {
			p, err := getPod(ctx, cs, "resized")
			if err != nil || p.Status.ObservedGeneration < gen || len(p.Status.ContainerStatuses) == 0 {
				return false, nil
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
					return false, nil
				}
			}
			for i, s := range p.Status.ContainerStatuses {
				if s.State.Running == nil || s.Resources == nil || s.Resources.Limits.Memory().Cmp(*p.Spec.Containers[i].Resources.Limits.Memory()) != 0 {
					return false, nil
				}
			}
			done = p
			return true, nil
		})
		return done
	}
	after := waitResized(resized.Generation)
	st = after.Status.ContainerStatuses[0]
	if st.RestartCount != 0 || st.ContainerID != running.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("NotRequired resize restarted the container: restarts %d, id %s", st.RestartCount, st.ContainerID)
	}
	if st.Resources.Limits.Cpu().String() != "300m" || st.Resources.Requests.Memory().String() != "48Mi" || st.AllocatedResources.Cpu().String() != "150m" {
		t.Errorf("status after the resize: resources %v allocated %v", st.Resources, st.AllocatedResources)
	}
	cpu, mem = cgroupLimits(t, rt, id)
	if !strings.HasPrefix(cpu, "30000") || mem != "100663296" {
		t.Errorf("cgroup after the resize: cpu %q memory %q, want quota 30000 and 100663296", cpu, mem)
	}
	rs := after.Status.ContainerStatuses[1]
	if rs.RestartCount != 1 {
		t.Errorf("RestartContainer resize: restart count %d, want 1", rs.RestartCount)
	}
	if _, mem := cgroupLimits(t, rt, strings.TrimPrefix(rs.ContainerID, "containerd://")); mem != "83886080" {
		t.Errorf("restarted container's memory limit %q, want 83886080", mem)
	}

	patch = `{"spec":{"containers":[{"name":"main","resizePolicy":[{"resourceName":"memory","restartPolicy":"RestartContainer"}]}]}}`
	if _, err := pods.Patch(ctx, "resized", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize"); err == nil {
		t.Errorf("changing the resize policy through pods/resize was accepted; upstream refuses it")
	}

	// More cpu than the node has left waits, Deferred.
	node, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := node.Status.Allocatable.Cpu().DeepCopy()
	filler := busyboxPod("filler", corev1.RestartPolicyAlways, "exec busybox sleep 3600")
	// The resized pod requests 250m (150m and 100m): leave it 50m more;
	// the resize below asks for 350m in all.
	half := resource.NewMilliQuantity(all.MilliValue()-300, resource.DecimalSI)
	filler.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *half}}
	if _, err := pods.Create(ctx, filler, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "filler running", func(ctx context.Context) (bool, error) {
		p, err := getPod(ctx, cs, "filler")
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	patch = `{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"250m"}}}]}}`
	deferred, err := pods.Patch(ctx, "resized", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "resize deferred", func(ctx context.Context) (bool, error) {
		p, err := getPod(ctx, cs, "resized")
		if err != nil {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending && c.Reason == corev1.PodReasonDeferred && c.ObservedGeneration == deferred.Generation &&
				strings.HasPrefix(c.Message, "Node didn't have enough resource: cpu, requested: 350, used: ") {
				return p.Status.ContainerStatuses[0].AllocatedResources.Cpu().String() == "150m", nil
			}
		}
		return false, nil
	})
	// Once the filler is gone the resize proceeds.
	if err := pods.Delete(ctx, "filler", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	after = waitResized(deferred.Generation)
	if got := after.Status.ContainerStatuses[0].AllocatedResources.Cpu().String(); got != "250m" {
		t.Errorf("allocated cpu after the filler left: %s", got)
	}
}
