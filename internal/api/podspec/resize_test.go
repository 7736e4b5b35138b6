package podspec

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// resizablePod is a running Burstable pod whose node reports container
// resources, with a sidecar and a plain init container.
func resizablePod() *corev1.Pod {
	p := &corev1.Pod{Spec: validSpec()}
	p.Name = "p"
	p.Spec.InitContainers = []corev1.Container{
		{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
		{Name: "sidecar", Image: "busybox", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
	}
	DefaultPodSpec(&p.Spec)
	p.Status.QOSClass = corev1.PodQOSBurstable
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Resources: &corev1.ResourceRequirements{}}}
	return p
}

func TestValidatePodResize(t *testing.T) {
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	for _, tc := range []struct {
		name   string
		old    func(*corev1.Pod)
		mutate func(*corev1.Pod)
		want   []string // nil: valid
	}{
		{"cpu up", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = cpu("2") }, nil},
		{"add memory request", nil, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("64Mi")
		}, nil},
		// As upstream's validation has it, the policy itself does not change.
		{"resize policy", nil, func(p *corev1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		}, []string{"spec: Forbidden: only cpu and memory resources are mutable"}},
		{"plain init container", nil, func(p *corev1.Pod) { p.Spec.InitContainers[0].Resources.Requests = cpu("200m") }, nil},
		{"sidecar", nil, func(p *corev1.Pod) { p.Spec.InitContainers[1].Resources.Requests = cpu("200m") }, nil},
		{"remove limit", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = nil },
			[]string{"spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"}},
		{"remove request", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = nil },
			[]string{"spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"}},
		{"QoS change", nil, func(p *corev1.Pod) {
			r := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("64Mi")}
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: r, Limits: r}
			for i := range p.Spec.InitContainers {
				p.Spec.InitContainers[i].Resources = corev1.ResourceRequirements{Requests: r, Limits: r}
			}
		}, []string{`spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing`}},
		{"other resource", nil, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		}, []string{"spec: Forbidden: only cpu and memory resources are mutable"}},
		{"image", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" },
			[]string{"spec: Forbidden: only cpu and memory resources are mutable"}},
		{"rename", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Name = "other" },
			[]string{"spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize"}},
		{"add container", nil, func(p *corev1.Pod) {
			c := p.Spec.Containers[0]
			c.Name = "second"
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, []string{"spec.containers: Forbidden: containers may not be added or removed on resize"}},
		{"non-sidecar init with RestartContainer", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
		}, func(p *corev1.Pod) { p.Spec.InitContainers[0].Resources.Requests = cpu("200m") }, []string{"spec.initContainers[0]: Forbidden: non-sidecar init containers with a resize policy of RestartContainer cannot be resized"}},
		{"init container image", nil, func(p *corev1.Pod) { p.Spec.InitContainers[1].Image = "busybox:1" },
			[]string{"spec.initContainers[1]: Forbidden: only cpu and memory resources for init or sidecar containers are mutable"}},
		{"volumes", nil, func(p *corev1.Pod) { p.Spec.Volumes[0].EmptyDir.Medium = corev1.StorageMediumMemory },
			[]string{"spec.volumes: Forbidden: volumes are immutable on resize when InPlacePodVerticalScalingMemoryBackedVolumes feature gate is disabled"}},
		{"static pod", func(p *corev1.Pod) { p.Annotations = map[string]string{mirrorPodAnnotation: "x"} },
			func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = cpu("2") },
			[]string{"[]: Forbidden: static pods cannot be resized"}},
		{"windows pod", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} },
			func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = cpu("2") },
			[]string{"[]: Forbidden: windows pods cannot be resized"}},
		{"node without resize", func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Resources = nil },
			func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = cpu("2") },
			[]string{"spec: Forbidden: Pod running on node without support for resize"}},
		{"pod-level cpu", func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{Limits: cpu("2")} },
			func(p *corev1.Pod) { p.Spec.Resources.Limits = cpu("3") }, nil},
		{"pod-level removed", func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{Limits: cpu("2")} },
			func(p *corev1.Pod) { p.Spec.Resources.Limits = nil },
			[]string{"spec.resources.limits: Forbidden: pod-level resource limits cannot be removed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := resizablePod()
			if tc.old != nil {
				tc.old(old)
			}
			n := old.DeepCopy()
			tc.mutate(n)
			got := errStrings(ValidatePodResize(MergeResize(n, old), old))
			// A change MergeResize drops is not an error: validate the
			// body as sent for those cases too.
			if tc.want != nil && len(got) == 0 {
				got = errStrings(ValidatePodResize(n, old))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// MergeResize takes only resources and resize policies from the body.
func TestMergeResize(t *testing.T) {
	old := resizablePod()
	n := old.DeepCopy()
	n.Labels = map[string]string{"a": "b"}
	n.Spec.Containers[0].Image = "other"
	n.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	n.Status.Phase = corev1.PodFailed
	got := MergeResize(n, old)
	if got.Labels != nil || got.Spec.Containers[0].Image != old.Spec.Containers[0].Image || got.Status.Phase != old.Status.Phase {
		t.Errorf("kept a non-resize change: %+v", got)
	}
	if l := got.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; l.String() != "3" {
		t.Errorf("cpu limit %s, want 3", l.String())
	}
}
