package defaulttolerationseconds

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "DefaultTolerationSeconds"

// New is the plugin: it mutates pods being created or updated (an update
// that drops the default tolerations gets them back, as upstream's, so
// that it does not fail as a change to existing tolerations).
func New() admission.Plugin {
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{{Resource: "pods"}}, Operations: []admission.Operation{admission.Create, admission.Update}, Mutate: Mutate}
}

// Seconds is how long the added tolerations last (upstream's
// --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds).
const Seconds int64 = 300

// Mutate adds the missing default tolerations to a pod being created or
// updated; other objects pass unchanged.
func Mutate(_ context.Context, a *admission.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if !toleratesNoExecute(pod.Spec.Tolerations, key) {
			seconds := Seconds
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds,
			})
		}
	}
	return nil
}

// toleratesNoExecute says whether one of ts already covers key's NoExecute
// taint: same key or any key, NoExecute or any effect (as upstream checks).
func toleratesNoExecute(ts []corev1.Toleration, key string) bool {
	for _, t := range ts {
		if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
			return true
		}
	}
	return false
}
