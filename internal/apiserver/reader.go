package apiserver

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

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

// List lists the objects of a built-in resource in namespace ("": all) as
// the watch cache holds them (resourceVersion "0"). The objects are
// shared: the caller must not change them.
func (s *Server) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error) {
	rs, ok := s.stores[gvr]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	}
	objs, _, err := s.listMatching(ctx, rs, namespace, &listOptions{labels: labels.Everything(), fields: fields.Everything(), rv: "0"})
	return objs, err
}
