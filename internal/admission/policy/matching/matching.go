package matching

import (
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Request is what matching looks at of an admission request.
type Request struct {
	Operation   admissionv1.OperationType
	Resource    schema.GroupVersionResource
	Subresource string
	Kind        schema.GroupVersionKind
	// Namespace is the request's namespace ("" for cluster-scoped
	// resources; a namespace's own name for a request on a namespace).
	Namespace string
	Name      string
	// ObjectLabels and OldObjectLabels are the labels of the new and the
	// stored object; nil for an absent object.
	ObjectLabels, OldObjectLabels map[string]string
}

// Result is a match: the resource and kind the request matched as (the
// request's own, or an equivalent one under matchPolicy Equivalent).
type Result struct {
	Matches  bool
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

// Equivalents lists the resources that are the same objects as r at other
// versions or groups (r itself may be among them), with the kind of each;
// nil means there are none.
type Equivalents func(r schema.GroupVersionResource, subresource string) []Equivalent

// Equivalent is one resource equivalent to a request's.
type Equivalent struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Matches reports whether req falls under m. namespaceLabels returns the
// labels of the request's namespace (called only when a namespace
// selector needs them); equivalents may be nil.
func Matches(m *admissionv1.MatchResources, req *Request, namespaceLabels func() (map[string]string, error), equivalents Equivalents) (Result, error) {
	if m == nil {
		return Result{Matches: true, Resource: req.Resource, Kind: req.Kind}, nil
	}
	nsMatch, nsErr := matchNamespace(m.NamespaceSelector, req, namespaceLabels)
	if !nsMatch && nsErr == nil {
		return Result{}, nil
	}
	objMatch, objErr := matchObject(m.ObjectSelector, req)
	if !objMatch && objErr == nil {
		return Result{}, nil
	}
	if excluded := matchRules(m.ExcludeResourceRules, m.MatchPolicy, req, equivalents); excluded.Matches {
		return Result{}, nil
	}
	res := Result{Matches: true, Resource: req.Resource, Kind: req.Kind}
	if len(m.ResourceRules) > 0 {
		res = matchRules(m.ResourceRules, m.MatchPolicy, req, equivalents)
	}
	if !res.Matches {
		return Result{}, nil
	}
	// Selector errors count only for requests the rules select.
	if nsErr != nil {
		return Result{}, nsErr
	}
	if objErr != nil {
		return Result{}, objErr
	}
	return res, nil
}

func matchNamespace(sel *metav1.LabelSelector, req *Request, namespaceLabels func() (map[string]string, error)) (bool, error) {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return true, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	if req.Resource == namespaces && req.Subresource == "" {
		// A namespace is matched by its own labels (the stored ones on a
		// delete).
		l := req.ObjectLabels
		if l == nil {
			l = req.OldObjectLabels
		}
		return s.Matches(labels.Set(l)), nil
	}
	if req.Namespace == "" {
		// Other cluster-scoped resources are never skipped.
		return true, nil
	}
	l, err := namespaceLabels()
	if err != nil {
		return false, err
	}
	return s.Matches(labels.Set(l)), nil
}

func matchObject(sel *metav1.LabelSelector, req *Request) (bool, error) {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return true, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	return (req.ObjectLabels != nil && s.Matches(labels.Set(req.ObjectLabels))) ||
		(req.OldObjectLabels != nil && s.Matches(labels.Set(req.OldObjectLabels))), nil
}

// matchRules: the request's own resource first; under Equivalent, then
// each equivalent resource.
func matchRules(rules []admissionv1.NamedRuleWithOperations, policy *admissionv1.MatchPolicyType, req *Request, equivalents Equivalents) Result {
	for i := range rules {
		if ruleMatches(&rules[i], req, req.Resource) {
			return Result{Matches: true, Resource: req.Resource, Kind: req.Kind}
		}
	}
	if policy == nil || *policy == admissionv1.Exact || equivalents == nil {
		return Result{}
	}
	for _, eq := range equivalents(req.Resource, req.Subresource) {
		if eq.Resource == req.Resource {
			continue
		}
		for i := range rules {
			if ruleMatches(&rules[i], req, eq.Resource) {
				return Result{Matches: true, Resource: eq.Resource, Kind: eq.Kind}
			}
		}
	}
	return Result{}
}

func ruleMatches(r *admissionv1.NamedRuleWithOperations, req *Request, resource schema.GroupVersionResource) bool {
	if !scopeMatches(r.Scope, req, resource) ||
		!operationMatches(r.Operations, req.Operation) ||
		!exactOrWildcard(r.APIGroups, resource.Group) ||
		!exactOrWildcard(r.APIVersions, resource.Version) ||
		!resourceMatches(r.Resources, resource.Resource, req.Subresource) {
		return false
	}
	return len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, req.Name)
}

func scopeMatches(scope *admissionv1.ScopeType, req *Request, resource schema.GroupVersionResource) bool {
	if scope == nil || *scope == admissionv1.AllScopes {
		return true
	}
	// Namespaces are cluster-scoped though their requests carry their
	// own name as namespace.
	clusterScoped := resource == namespaces || req.Namespace == ""
	switch *scope {
	case admissionv1.NamespacedScope:
		return !clusterScoped
	case admissionv1.ClusterScope:
		return clusterScoped
	}
	return false
}

func operationMatches(ops []admissionv1.OperationType, op admissionv1.OperationType) bool {
	return slices.Contains(ops, admissionv1.OperationAll) || slices.Contains(ops, op)
}

func exactOrWildcard(items []string, v string) bool {
	return slices.Contains(items, "*") || slices.Contains(items, v)
}

// resourceMatches: "pods", "pods/status", "pods/*", "*/status", "*", "*/*".
func resourceMatches(patterns []string, resource, subresource string) bool {
	for _, p := range patterns {
		res, sub, _ := strings.Cut(p, "/")
		if (res == "*" || res == resource) && (sub == "*" || sub == subresource) {
			return true
		}
	}
	return false
}

// IsExempt reports whether a request is on the admission configuration
// itself, which policies never see (so a policy cannot lock itself in).
func IsExempt(kind schema.GroupVersionKind) bool {
	if kind.Group != admissionv1.GroupName {
		return false
	}
	switch kind.Kind {
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
		"ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
		return true
	}
	return false
}
