package webhook

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

// Versions is what matchPolicy Equivalent needs of the API server: which
// other resources serve the same objects (the other versions of a custom
// resource; events.k8s.io and core events), and converting an object to
// another of their kinds.
type Versions interface {
	// Equivalents lists the resources equivalent to gvr (gvr itself
	// excluded) with the kind of subresource sub at each.
	Equivalents(gvr schema.GroupVersionResource, sub string) []Equivalent
	// Convert converts obj to kind, returning a new object.
	Convert(ctx context.Context, obj runtime.Object, kind schema.GroupVersionKind) (runtime.Object, error)
	// Default applies the defaults of obj's built-in type to it.
	Default(obj runtime.Object)
}

// Equivalent is a resource serving the same objects as another, and the
// kind of its objects (of the subresource asked for).
type Equivalent struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

// invocation is a webhook to call and the resource and kind it sees the
// request as: the request's own, or an equivalent one its rules name.
type invocation struct {
	hook     *hook
	resource schema.GroupVersionResource
	kind     schema.GroupVersionKind
	// denied is set once the webhook has refused the request (for the
	// metrics, which tell a refusal from a failure).
	denied bool
}

var namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// ruleMatches reports whether rule r covers a request for resource
// (subresource sub) with operation op in namespace ns, as upstream's
// rules.Matcher.
func ruleMatches(r *admissionregistrationv1.RuleWithOperations, op admission.Operation, resource schema.GroupVersionResource, sub, ns string) bool {
	if r.Scope != nil {
		switch *r.Scope {
		case admissionregistrationv1.AllScopes:
		case admissionregistrationv1.NamespacedScope:
			// A namespace is cluster-scoped even though its requests carry
			// its name as their namespace.
			if resource == namespacesResource || ns == "" {
				return false
			}
		case admissionregistrationv1.ClusterScope:
			if resource != namespacesResource && ns != "" {
				return false
			}
		default:
			return false
		}
	}
	if !operationMatches(r.Operations, op) || !exactOrWildcard(r.APIGroups, resource.Group) || !exactOrWildcard(r.APIVersions, resource.Version) {
		return false
	}
	for _, name := range r.Resources {
		res, s, _ := strings.Cut(name, "/")
		if (res == "*" || res == resource.Resource) && (s == "*" || s == sub) {
			return true
		}
	}
	return false
}

func operationMatches(ops []admissionregistrationv1.OperationType, op admission.Operation) bool {
	for _, o := range ops {
		if o == admissionregistrationv1.OperationAll || string(o) == string(op) {
			return true
		}
	}
	return false
}

func exactOrWildcard(items []string, v string) bool {
	for _, x := range items {
		if x == "*" || x == v {
			return true
		}
	}
	return false
}

// request is one admission request as the webhooks see it: the
// attributes, and the objects converted to the kinds webhooks asked for.
type request struct {
	a        *admission.Attributes
	src      hookSource
	versions Versions
	// namespace is the namespace the request is in (a namespace's own
	// name for a request of a namespace).
	namespace string
	converted map[schema.GroupVersionKind][2]runtime.Object
}

func newRequest(a *admission.Attributes, src hookSource, versions Versions) *request {
	ns := a.Namespace
	if ns == "" && a.Resource == namespacesResource {
		ns = a.Name
	}
	return &request{a: a, src: src, versions: versions, namespace: ns}
}

// objects are the request's new and old objects as kind.
func (r *request) objects(ctx context.Context, kind schema.GroupVersionKind) (obj, old runtime.Object, err error) {
	if kind == r.a.Kind || r.versions == nil {
		return r.a.Object, r.a.OldObject, nil
	}
	if c, ok := r.converted[kind]; ok {
		return c[0], c[1], nil
	}
	if r.a.Object != nil {
		if obj, err = r.versions.Convert(ctx, r.a.Object, kind); err != nil {
			return nil, nil, err
		}
	}
	if r.a.OldObject != nil {
		if old, err = r.versions.Convert(ctx, r.a.OldObject, kind); err != nil {
			return nil, nil, err
		}
	}
	if r.converted == nil {
		r.converted = map[schema.GroupVersionKind][2]runtime.Object{}
	}
	r.converted[kind] = [2]runtime.Object{obj, old}
	return obj, old, nil
}

// forget drops the converted objects (the object changed).
func (r *request) forget() { r.converted = nil }

// shouldCall decides whether h is called for the request, in upstream's
// order: selectors, rules (the request's resource, then equivalent ones),
// then matchConditions. A selector's error counts only if the rules match.
func (r *request) shouldCall(ctx context.Context, h *hook, authz conditionAuthorizer) (*invocation, error) {
	nsMatch, nsErr := r.matchNamespace(ctx, h)
	if !nsMatch && nsErr == nil {
		return nil, nil
	}
	objMatch, objErr := r.matchObject(h)
	if !objMatch && objErr == nil {
		return nil, nil
	}
	a := r.a
	var inv *invocation
	for i := range h.rules {
		if ruleMatches(&h.rules[i], a.Operation, a.Resource, a.Subresource, r.namespace) {
			inv = &invocation{hook: h, resource: a.Resource, kind: a.Kind}
			break
		}
	}
	if inv == nil && h.matchPolicy == admissionregistrationv1.Equivalent && r.versions != nil {
		equivalents := r.versions.Equivalents(a.Resource, a.Subresource)
	rules:
		for i := range h.rules {
			for _, e := range equivalents {
				if e.Resource == a.Resource {
					continue
				}
				if ruleMatches(&h.rules[i], a.Operation, e.Resource, a.Subresource, r.namespace) {
					if e.Kind.Empty() {
						return nil, apierrors.NewInternalError(fmt.Errorf("unable to convert to %v: unknown kind", e.Resource))
					}
					inv = &invocation{hook: h, resource: e.Resource, kind: e.Kind}
					break rules
				}
			}
		}
	}
	if inv == nil {
		return nil, nil
	}
	if nsErr != nil {
		return nil, nsErr
	}
	if objErr != nil {
		return nil, objErr
	}
	if len(h.matchConditions) > 0 {
		ok, err := r.matchConditions(ctx, inv, authz)
		if err != nil || !ok {
			return nil, err
		}
	}
	return inv, nil
}

// matchNamespace applies h's namespaceSelector: to the labels of the
// request's namespace, or of the Namespace being created or updated.
// Requests of other cluster-scoped resources always match.
func (r *request) matchNamespace(ctx context.Context, h *hook) (bool, error) {
	a := r.a
	if r.namespace == "" && a.Resource.Resource != "namespaces" {
		return true, nil
	}
	if h.namespaceSelectorErr != nil {
		return false, apierrors.NewInternalError(h.namespaceSelectorErr)
	}
	if h.namespaceSelector.Empty() {
		return true, nil
	}
	var nsLabels map[string]string
	if a.Resource == namespacesResource && a.Subresource == "" && (a.Operation == admission.Create || a.Operation == admission.Update) {
		m, err := meta.Accessor(a.Object)
		if err != nil {
			return false, apierrors.NewInternalError(err)
		}
		nsLabels = m.GetLabels()
	} else {
		var err error
		nsLabels, err = r.src.NamespaceLabels(ctx, r.namespace)
		if apierrors.IsNotFound(err) {
			// As upstream: the namespace's 404 is the answer.
			return false, err
		}
		if err != nil {
			return false, apierrors.NewInternalError(err)
		}
	}
	return h.namespaceSelector.Matches(labels.Set(nsLabels)), nil
}

// matchObject applies h's objectSelector to the new or the old object.
func (r *request) matchObject(h *hook) (bool, error) {
	if h.objectSelectorErr != nil {
		return false, apierrors.NewInternalError(h.objectSelectorErr)
	}
	if h.objectSelector.Empty() {
		return true, nil
	}
	return selects(h.objectSelector, r.a.Object) || selects(h.objectSelector, r.a.OldObject), nil
}

func selects(s labels.Selector, obj runtime.Object) bool {
	if obj == nil {
		return false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(m.GetLabels()))
}

// exempt reports whether no webhook may see the request, as upstream: the
// admission configurations themselves (so a broken webhook cannot lock
// them), and the reviews of authentication and authorization, which are
// not stored.
func exempt(a *admission.Attributes) bool {
	switch a.Kind.Group {
	case admissionregistrationv1.GroupName:
		switch a.Kind.Kind {
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
			"ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
			return true
		}
	}
	switch a.Resource.Group {
	case "authentication.k8s.io", "authorization.k8s.io":
		return true
	}
	return false
}
