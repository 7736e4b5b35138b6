package noderestriction

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry/core"
)

// Name is the plugin's name, as upstream's.
const Name = "NodeRestriction"

// New is the plugin, for pod creates.
func New() admission.Plugin {
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{{Resource: "pods"}}, BeforeCreate: beforeCreate}
}

func beforeCreate(ctx context.Context, obj runtime.Object) (func(), error) {
	pod := obj.(*corev1.Pod)
	if node := auth.NodeName(auth.UserFrom(ctx)); node != "" {
		if err := core.AdmitNodePod(node, pod); err != nil {
			return nil, err
		}
	}
	return nil, core.AdmitMirrorPod(pod)
}
