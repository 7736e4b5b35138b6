package defaulttolerationseconds

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/admission"
)

func TestMutate(t *testing.T) {
	s := int64(5)
	cases := []struct {
		name  string
		given []corev1.Toleration
		added []string // keys added, in order
	}{
		{"none", nil, []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}},
		{"not-ready tolerated", []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s}}, []string{corev1.TaintNodeUnreachable}},
		{"any key, any effect", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, nil},
		{"unreachable with any effect", []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists}}, []string{corev1.TaintNodeNotReady}},
		{"NoSchedule only does not count", []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: append([]corev1.Toleration(nil), c.given...)}}
			if err := Mutate(context.Background(), &admission.Attributes{Operation: admission.Create, Object: pod}); err != nil {
				t.Fatal(err)
			}
			added := pod.Spec.Tolerations[len(c.given):]
			if len(added) != len(c.added) {
				t.Fatalf("added %+v, want keys %v", added, c.added)
			}
			for i, tol := range added {
				if tol.Key != c.added[i] || tol.Effect != corev1.TaintEffectNoExecute || tol.Operator != corev1.TolerationOpExists ||
					tol.TolerationSeconds == nil || *tol.TolerationSeconds != Seconds {
					t.Errorf("added %+v, want %s NoExecute for %ds", tol, c.added[i], Seconds)
				}
			}
		})
	}
	if err := Mutate(context.Background(), &admission.Attributes{Operation: admission.Create, Object: &corev1.Node{}}); err != nil {
		t.Errorf("a node: %v", err)
	}
}
