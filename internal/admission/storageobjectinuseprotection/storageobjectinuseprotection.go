package storageobjectinuseprotection

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "StorageObjectInUseProtection"

// The finalizers, as upstream's.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

var finalizers = map[schema.GroupResource]string{
	{Resource: "persistentvolumeclaims"}: PVCProtectionFinalizer,
	{Resource: "persistentvolumes"}:      PVProtectionFinalizer,
}

// New is the plugin: it mutates claims and volumes being created.
func New() admission.Plugin {
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{{Resource: "persistentvolumeclaims"}, {Resource: "persistentvolumes"}},
		Operations: []admission.Operation{admission.Create}, Mutate: mutate}
}

func mutate(_ context.Context, a *admission.Attributes) error {
	f, ok := finalizers[a.GroupResource()]
	if !ok || a.Object == nil {
		return nil
	}
	m, err := meta.Accessor(a.Object)
	if err != nil || slices.Contains(m.GetFinalizers(), f) {
		return nil
	}
	m.SetFinalizers(append(m.GetFinalizers(), f))
	return nil
}
