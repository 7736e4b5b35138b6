// Package admissiontest helps plugins' table tests: Objects is
// admission.Objects over a fixed set of objects, the lowest seam a plugin
// has (the API server's storage).
package admissiontest

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// Objects holds objects by resource.
type Objects map[schema.GroupVersionResource][]runtime.Object

var _ admission.Objects = Objects(nil)

// Get finds the object of gvr named name in namespace ns.
func (o Objects) Get(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	for _, obj := range o[gvr] {
		if m, err := meta.Accessor(obj); err == nil && m.GetNamespace() == ns && m.GetName() == name {
			return obj.DeepCopyObject(), nil
		}
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

// List returns the objects of gvr in ns ("": all).
func (o Objects) List(_ context.Context, gvr schema.GroupVersionResource, ns string) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, obj := range o[gvr] {
		if m, err := meta.Accessor(obj); err == nil && (ns == "" || m.GetNamespace() == ns) {
			out = append(out, obj)
		}
	}
	return out, nil
}
