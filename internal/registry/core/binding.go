package core

import (
	corev1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/registry"
)

// bindings is the older door to pods/binding, kept by upstream: a create of
// a Binding in a namespace binds the pod its metadata.name names.
func bindings() registry.Resource {
	return registry.Resource{
		Kind:       corev1.SchemeGroupVersion.WithKind("Binding"),
		Plural:     "bindings",
		Singular:   "binding",
		Namespaced: true,
		Verbs:      []string{"create"},
		Ephemeral:  true,
		CreateAs:   &registry.SubresourceRef{Resource: "pods", Subresource: "binding"},
	}
}
