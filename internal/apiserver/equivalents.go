package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"plainkube.dev/plainkube/internal/apiserver/custom"
)

// EquivalentResource is a resource serving the same stored objects as
// another, and the kind of its objects (or of the subresource asked for).
type EquivalentResource struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

// EquivalentResources lists the resources other than gvr that serve the
// objects gvr serves, as upstream's EquivalentResourceMapper (admission
// webhooks' matchPolicy Equivalent): the other served versions of a
// custom resource, and the resources sharing a storage (events.k8s.io and
// core events). For subresource sub, only those serving it are listed,
// with its kind ("status": the resource's kind, "scale":
// autoscaling/v1 Scale).
func (s *Server) EquivalentResources(gvr schema.GroupVersionResource, sub string) []EquivalentResource {
	rs, ok := s.lookupStore(gvr)
	if !ok {
		return nil
	}
	var out []EquivalentResource
	add := func(other *resourceStore) {
		if other.gvr == gvr || other.prefix != rs.prefix {
			return
		}
		kind := other.res.Kind
		switch sub {
		case "":
		case "status":
			if !slices.Contains(other.res.Subresources, sub) {
				return
			}
		case "scale":
			if !slices.Contains(other.res.Subresources, sub) {
				return
			}
			kind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
		default:
			return
		}
		out = append(out, EquivalentResource{Resource: other.gvr, Kind: kind})
	}
	for _, other := range s.stores {
		add(other)
	}
	if st := s.custom.Load(); st != nil {
		for _, other := range st.stores {
			add(other)
		}
	}
	slices.SortFunc(out, func(a, b EquivalentResource) int {
		if a.Resource.String() < b.Resource.String() {
			return -1
		}
		return 1
	})
	return out
}

// ConvertObject converts obj to kind, another version of the same stored
// resource (see EquivalentResources): a custom resource through its CRD's
// conversion, a built-in one through the storage the two share. It
// returns a new object.
func (s *Server) ConvertObject(_ context.Context, obj runtime.Object, kind schema.GroupVersionKind) (runtime.Object, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if st := s.custom.Load(); st != nil {
			for _, rs := range st.stores {
				if rs.res.Kind == kind {
					out, err := rs.cr.Convert([]*unstructured.Unstructured{u.DeepCopy()}, kind.Version)
					if err != nil {
						return nil, err
					}
					return out[0], nil
				}
			}
		}
		return nil, fmt.Errorf("no custom resource of kind %v", kind)
	}
	kinds, _, err := s.codecs.scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	from := kinds[0]
	if from == kind {
		return obj.DeepCopyObject(), nil
	}
	for _, rs := range s.stores {
		sa := rs.res.StoredAs
		switch {
		case sa == nil:
		case rs.res.Kind == from && sa.Kind == kind:
			return sa.ToStorage(obj), nil
		case rs.res.Kind == kind && sa.Kind == from:
			return sa.FromStorage(obj), nil
		}
	}
	return nil, fmt.Errorf("cannot convert %v to %v", from, kind)
}

// DefaultObject applies the defaults of the resource whose objects are of
// obj's kind, as the server does to an object it is given (a webhook's
// patched object is defaulted again, as upstream's); a custom object is
// also pruned of the fields its schema does not declare. Other objects are
// left as they are.
func (s *Server) DefaultObject(obj runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		s.defaultCustom(u)
		return
	}
	kinds, _, err := s.codecs.scheme.ObjectKinds(obj)
	if err != nil {
		return
	}
	for _, rs := range s.stores {
		if rs.res.Kind == kinds[0] && rs.res.Strategy.Default != nil {
			rs.res.Strategy.Default(obj)
			return
		}
	}
}

// defaultCustom prunes and defaults a custom object as its version's
// schema says, as when it is decoded.
func (s *Server) defaultCustom(u *unstructured.Unstructured) {
	st := s.custom.Load()
	if st == nil {
		return
	}
	gvk := u.GroupVersionKind()
	for _, rs := range st.stores {
		if rs.cr.Ver.Resource.Kind != gvk {
			continue
		}
		if rs.cr.Ver.Coerce != nil {
			rs.cr.Ver.Coerce(u, custom.CoerceOptions{})
		}
		if d := rs.res.Strategy.Default; d != nil {
			d(u)
		}
		return
	}
}

// KindResource is a resource serving a kind's objects, and whether it is
// namespaced.
type KindResource struct {
	Resource   schema.GroupVersionResource
	Namespaced bool
}

// ResourcesForKind lists the resources whose objects are of kind gvk (at
// its version), built-in and custom, as upstream's REST mapper's
// RESTMappings.
func (s *Server) ResourcesForKind(gvk schema.GroupVersionKind) []KindResource {
	var out []KindResource
	add := func(rs *resourceStore) {
		if rs.res.Kind == gvk {
			out = append(out, KindResource{Resource: rs.gvr, Namespaced: rs.res.Namespaced})
		}
	}
	for _, rs := range s.stores {
		add(rs)
	}
	if st := s.custom.Load(); st != nil {
		for _, rs := range st.stores {
			add(rs)
		}
	}
	slices.SortFunc(out, func(a, b KindResource) int { return strings.Compare(a.Resource.String(), b.Resource.String()) })
	return out
}
