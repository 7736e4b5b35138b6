package metricsapi

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSimulatedUsage(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}
	always := corev1.ContainerRestartPolicyAlways
	pod := func(ann map[string]string, states map[string]corev1.ContainerState) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: ann},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: &always}},
				Containers:     []corev1.Container{{Name: "web"}, {Name: "app"}},
			}}
		for name, st := range states {
			cs := corev1.ContainerStatus{Name: name, State: st}
			if name == "sidecar" {
				p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, cs)
			} else {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
			}
		}
		return p
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		want    string // name=cpu/memory, …
		wantOK  bool
		wantErr string
	}{
		{"per container, every running one", pod(map[string]string{AnnotationCPUUsage: "800m", AnnotationMemoryUsage: "64Mi"},
			map[string]corev1.ContainerState{"web": running, "app": running}), "app=800m/64Mi web=800m/64Mi", true, ""},
		{"a container's own value", pod(map[string]string{AnnotationCPUUsage: "800m", AnnotationCPUUsage + ".sidecar": "10m"},
			map[string]corev1.ContainerState{"web": running, "sidecar": running}), "sidecar=10m/0 web=800m/0", true, ""},
		{"containers not running report nothing", pod(map[string]string{AnnotationCPUUsage: "1"},
			map[string]corev1.ContainerState{"web": running, "app": waiting}), "web=1/0", true, ""},
		{"no annotation: nothing used", pod(nil, map[string]corev1.ContainerState{"web": running}), "web=0/0", true, ""},
		{"nothing runs", pod(map[string]string{AnnotationCPUUsage: "1"}, map[string]corev1.ContainerState{"web": waiting}), "", false, ""},
		{"a bad value", pod(map[string]string{AnnotationMemoryUsage: "lots"}, map[string]corev1.ContainerState{"web": running}),
			"", false, `annotation sim.plainkube.dev/memory-usage: "lots" is not a quantity`},
		{"a negative value", pod(map[string]string{AnnotationCPUUsage + ".web": "-1"}, map[string]corev1.ContainerState{"web": running}),
			"", false, `annotation sim.plainkube.dev/cpu-usage.web: "-1" is negative`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := SimulatedUsage(c.pod)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || ok != c.wantOK {
				t.Fatalf("ok %v err %v", ok, err)
			}
			s := ""
			for _, m := range got {
				if s != "" {
					s += " "
				}
				cpu, mem := m.Usage[corev1.ResourceCPU], m.Usage[corev1.ResourceMemory]
				s += m.Name + "=" + cpu.String() + "/" + mem.String()
			}
			if s != c.want {
				t.Errorf("= %q, want %q", s, c.want)
			}
		})
	}
}
