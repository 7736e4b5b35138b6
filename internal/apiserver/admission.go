package apiserver

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AdmitFunc is a mutating admission plugin run on a create: obj is the new
// object, defaulted but not yet validated, with its namespace set and no
// UID (its name is still empty under generateName). It may change obj, or
// reject the create with an API error. Plugins run on dry runs too.
type AdmitFunc func(ctx context.Context, obj runtime.Object) error

// admit runs the admission plugins of rs on a new object.
func (s *Server) admit(ctx context.Context, rs *resourceStore, obj runtime.Object) error {
	for _, plugin := range s.cfg.Admission[rs.gr] {
		if err := plugin(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// Get reads one object of a built-in resource from storage (a consistent
// read) and returns a copy the caller may keep. It is how parts of the API
// server (authenticators, admission plugins) read other objects; errors
// are API errors (NotFound…).
func (s *Server) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	rs, ok := s.stores[gvr]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	obj, _, err := rs.get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.DeepCopyObject(), nil
}
