package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func ctr(req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestComputePodQOS(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want corev1.PodQOSClass
	}{
		{"nothing", corev1.PodSpec{Containers: []corev1.Container{ctr(nil, nil)}}, corev1.PodQOSBestEffort},
		{"only extended resources", corev1.PodSpec{Containers: []corev1.Container{ctr(rl("example.com/gpu", "1"), rl("example.com/gpu", "1"))}}, corev1.PodQOSBestEffort},
		{"zero requests", corev1.PodSpec{Containers: []corev1.Container{ctr(rl("cpu", "0"), nil)}}, corev1.PodQOSBestEffort},
		{"equal cpu and memory", corev1.PodSpec{Containers: []corev1.Container{
			ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}}, corev1.PodQOSGuaranteed},
		{"limits only (requests defaulted)", corev1.PodSpec{Containers: []corev1.Container{
			ctr(nil, rl("cpu", "1", "memory", "1Gi"))}}, corev1.PodQOSBurstable},
		{"cpu limit only", corev1.PodSpec{Containers: []corev1.Container{ctr(rl("cpu", "1"), rl("cpu", "1"))}}, corev1.PodQOSBurstable},
		{"requests below limits", corev1.PodSpec{Containers: []corev1.Container{
			ctr(rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}}, corev1.PodQOSBurstable},
		{"one guaranteed, one best effort", corev1.PodSpec{Containers: []corev1.Container{
			ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi")), ctr(nil, nil)}}, corev1.PodQOSBurstable},
		{"init container counts", corev1.PodSpec{
			Containers:     []corev1.Container{ctr(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))},
			InitContainers: []corev1.Container{ctr(rl("cpu", "1"), nil)}}, corev1.PodQOSBurstable},
		{"pod-level resources decide", corev1.PodSpec{
			Containers: []corev1.Container{ctr(nil, nil)},
			Resources:  &corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi")}}, corev1.PodQOSGuaranteed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ComputePodQOS(&corev1.Pod{Spec: tc.spec}); got != tc.want {
				t.Errorf("ComputePodQOS = %s, want %s", got, tc.want)
			}
		})
	}
}
