package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdmitMirrorPod(t *testing.T) {
	mirror := func(mod func(*corev1.PodSpec)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "m", Annotations: map[string]string{"kubernetes.io/config.mirror": "h"}},
			Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		mod(&p.Spec)
		return p
	}
	cases := []struct {
		pod  *corev1.Pod
		want string
	}{
		{mirror(func(*corev1.PodSpec) {}), ""},
		{mirror(func(s *corev1.PodSpec) { s.ServiceAccountName = "default" }), `pods "m" is forbidden: a mirror pod may not reference service accounts`},
		{mirror(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		}), "a mirror pod may not reference secrets"},
		{mirror(func(s *corev1.PodSpec) {
			s.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
		}), "a mirror pod may not reference secrets"},
		{mirror(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}}}}
		}), "a mirror pod may not use ServiceAccountToken volume projections"},
		{mirror(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
		}), ""},
		// Not a mirror pod: anything goes.
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{ServiceAccountName: "default"}}, ""},
	}
	for i, c := range cases {
		err := AdmitMirrorPod(c.pod)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d: %v", i, err)
		case c.want != "" && (err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%d: %v, want a Forbidden %q", i, err, c.want)
		}
	}
}

func TestAdmitNodePod(t *testing.T) {
	yes := true
	good := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "m", Annotations: map[string]string{"kubernetes.io/config.mirror": "h"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "u", Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: "n1"}}
	}
	if err := AdmitNodePod("n1", good()); err != nil {
		t.Errorf("mirror pod of its own: %v", err)
	}
	cases := map[string]func(*corev1.Pod){
		"can only create mirror pods":      func(p *corev1.Pod) { p.Annotations = nil },
		"spec.nodeName set to itself":      func(p *corev1.Pod) { p.Spec.NodeName = "n2" },
		"an owner reference set to itself": func(p *corev1.Pod) { p.OwnerReferences[0].Name = "n2" },
		"a single owner reference":         func(p *corev1.Pod) { p.OwnerReferences = append(p.OwnerReferences, p.OwnerReferences[0]) },
		"a controller owner reference":     func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil },
		"must not set blockOwnerDeletion":  func(p *corev1.Pod) { p.OwnerReferences[0].BlockOwnerDeletion = &yes },
	}
	for want, mod := range cases {
		p := good()
		mod(p)
		if err := AdmitNodePod("n1", p); err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}
