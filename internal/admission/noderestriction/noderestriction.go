package noderestriction

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry/core"
)

// Name is the plugin's name, as upstream's.
const Name = "NodeRestriction"

// New is the plugin: it validates pods being created.
func New() admission.Plugin {
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{{Resource: "pods"}}, Operations: []admission.Operation{admission.Create}, Validate: validate}
}

func validate(_ context.Context, a *admission.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if node := auth.NodeName(a.User); node != "" {
		if err := core.AdmitNodePod(node, pod); err != nil {
			return err
		}
	}
	return core.AdmitMirrorPod(pod)
}
