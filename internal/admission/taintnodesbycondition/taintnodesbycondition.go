package taintnodesbycondition

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "TaintNodesByCondition"

// New is the plugin: it mutates nodes being created.
func New() admission.Plugin {
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{{Resource: "nodes"}},
		Operations: []admission.Operation{admission.Create}, Mutate: mutate}
}

func mutate(_ context.Context, a *admission.Attributes) error {
	node, ok := a.Object.(*corev1.Node)
	if !ok {
		return nil
	}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&notReady) {
			return nil
		}
	}
	node.Spec.Taints = append(node.Spec.Taints, notReady)
	return nil
}
