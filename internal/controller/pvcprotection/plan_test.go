package pvcprotection

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPlan(t *testing.T) {
	now := metav1.Now()
	mk := func(deleting bool, finalizers ...string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Finalizers: finalizers}}
		if deleting {
			c.DeletionTimestamp = &now
		}
		return c
	}
	for _, tt := range []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		used  bool
		want  Action
	}{
		{"new claim gets it", mk(false), false, Add},
		{"protected claim", mk(false, Finalizer), true, None},
		{"deleting, used", mk(true, Finalizer), true, None},
		{"deleting, unused in cache: ask the API", mk(true, Finalizer), false, Check},
		{"deleting without it", mk(true, "other"), false, None},
	} {
		if got := plan(tt.claim, tt.used); got != tt.want {
			t.Errorf("%s: plan = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPodUses(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	eph := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-scratch",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Pod", Name: "p", UID: "pod-uid", Controller: new(true)}}}}
	zero := int64(0)
	now := metav1.Now()
	pod := func(node string, opts ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: types.UID("pod-uid")}, Spec: corev1.PodSpec{NodeName: node,
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			}}}
		for _, o := range opts {
			o(p)
		}
		return p
	}
	shut := func(p *corev1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &zero }
	otherNS := func(p *corev1.Pod) { p.Namespace = "other" }
	for _, tt := range []struct {
		name  string
		pod   *corev1.Pod
		claim *corev1.PersistentVolumeClaim
		want  bool
	}{
		{"scheduled pod", pod("n"), claim, true},
		{"unscheduled pod", pod(""), claim, false},
		{"shut-down pod still holds a named claim", pod("n", shut), claim, true},
		{"other namespace", pod("n", otherNS), claim, false},
		{"ephemeral claim", pod("n"), eph, true},
		{"ephemeral claim of a shut-down pod", pod("n", shut), eph, false},
	} {
		if got := podUses(tt.pod, tt.claim); got != tt.want {
			t.Errorf("%s: podUses = %v, want %v", tt.name, got, tt.want)
		}
	}
}
