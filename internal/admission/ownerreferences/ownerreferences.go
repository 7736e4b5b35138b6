package ownerreferences

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
)

// Name is the plugin's name, as upstream's.
const Name = "OwnerReferencesPermissionEnforcement"

// KindResource is a resource serving a kind's objects.
type KindResource struct {
	Resource   schema.GroupVersionResource
	Namespaced bool
}

// Mapper finds the resources serving a kind (upstream's RESTMapper).
type Mapper interface {
	ResourcesForKind(gvk schema.GroupVersionKind) []KindResource
}

// New is the plugin: it validates every create and update (of every
// resource and subresource but pods/status) as authz allows.
func New(authz auth.Authorizer, mapper Mapper) admission.Plugin {
	p := &plugin{authz: authz, mapper: mapper}
	return admission.Plugin{Name: Name, Operations: []admission.Operation{admission.Create, admission.Update},
		Subresources: []string{"*"}, Validate: p.validate}
}

type plugin struct {
	authz  auth.Authorizer
	mapper Mapper
}

func (p *plugin) validate(ctx context.Context, a *admission.Attributes) error {
	if a.GroupResource() == (schema.GroupResource{Resource: "pods"}) && a.Subresource == "status" {
		return nil
	}
	if a.User == nil || !changesOwnerReferences(a.Object, a.OldObject) {
		// No identity: a write the server makes itself.
		return nil
	}
	if a.Operation != admission.Create {
		d, reason, err := p.authz.Authorize(ctx, auth.Attributes{User: a.User, Verb: "delete", IsResource: true, Namespace: a.Namespace,
			APIGroup: a.Resource.Group, APIVersion: a.Resource.Version, Resource: a.Resource.Resource, Subresource: a.Subresource, Name: a.Name})
		if d != auth.Allow {
			return admission.Forbiddenf(a, "cannot set an ownerRef on a resource you can't delete: %v, %v", reason, err)
		}
	}
	blocking := newBlockingRefs(a.Object, a.OldObject)
	if len(blocking) == 0 {
		return nil
	}
	// Whoever may update the finalizers of everything may block any owner.
	if d, _, _ := p.authz.Authorize(ctx, auth.Attributes{User: a.User, Verb: "update", IsResource: true,
		APIGroup: "*", APIVersion: "*", Resource: "*", Subresource: "finalizers", Name: "*"}); d == auth.Allow {
		return nil
	}
	for _, ref := range blocking {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		var resources []KindResource
		if err == nil {
			resources = p.mapper.ResourcesForKind(gv.WithKind(ref.Kind))
			if len(resources) == 0 {
				err = &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, SearchedVersions: []string{gv.Version}}
			}
		}
		if err != nil {
			return admission.Forbiddenf(a, "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion %s Kind %s: %v", ref.APIVersion, ref.Kind, err)
		}
		for _, r := range resources {
			attrs := auth.Attributes{User: a.User, Verb: "update", IsResource: true, APIGroup: r.Resource.Group, APIVersion: r.Resource.Version,
				Resource: r.Resource.Resource, Subresource: "finalizers", Name: ref.Name}
			if r.Namespaced {
				attrs.Namespace = a.Namespace
			}
			if d, reason, err := p.authz.Authorize(ctx, attrs); d != auth.Allow {
				return admission.Forbiddenf(a, "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: %v, %v", reason, err)
			}
		}
	}
	return nil
}

// changesOwnerReferences reports whether obj's ownerReferences differ from
// old's (any, on a create).
func changesOwnerReferences(obj, old runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if old == nil {
		return len(m.GetOwnerReferences()) > 0
	}
	o, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	return !apiequality.Semantic.DeepEqual(o.GetOwnerReferences(), m.GetOwnerReferences())
}

// newBlockingRefs are obj's ownerReferences with blockOwnerDeletion that
// were not blocking (or not there) in old.
func newBlockingRefs(obj, old runtime.Object) []metav1.OwnerReference {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	var blocking []metav1.OwnerReference
	for _, ref := range m.GetOwnerReferences() {
		if ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			blocking = append(blocking, ref)
		}
	}
	if len(blocking) == 0 || old == nil {
		return blocking
	}
	o, err := meta.Accessor(old)
	if err != nil {
		return blocking
	}
	wasBlocking := map[types.UID]bool{}
	for _, ref := range o.GetOwnerReferences() {
		wasBlocking[ref.UID] = ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
	}
	var added []metav1.OwnerReference
	for _, ref := range blocking {
		if !wasBlocking[ref.UID] {
			added = append(added, ref)
		}
	}
	return added
}
