package quota

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The operations an Evaluator is asked about (admission's names).
const (
	Create = "CREATE"
	Update = "UPDATE"
)

// Evaluator is what quota knows of one resource.
type Evaluator interface {
	GroupResource() schema.GroupResource
	// Handles reports whether a write (op, on subresource, of obj over
	// old) may change the usage quota counts.
	Handles(op, subresource string, obj, old runtime.Object) bool
	// MatchingResources are the names among names this resource's usage
	// counts toward.
	MatchingResources(names []corev1.ResourceName) []corev1.ResourceName
	// MatchesScope reports whether obj is in the scope sel.
	MatchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error)
	// Constraints refuses an object that cannot be charged against a
	// quota limiting required (a pod without a cpu limit under limits.cpu).
	Constraints(required []corev1.ResourceName, obj runtime.Object) error
	// Usage is what obj uses, at time now.
	Usage(obj runtime.Object, now time.Time) (corev1.ResourceList, error)
}

// ObjectCountName is the quota resource that counts objects of gr:
// count/<resource>.<group>, or count/<resource> in the core group.
func ObjectCountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// ParseObjectCountName is the resource a count/<resource>.<group> name
// counts. The group is what follows the first dot.
func ParseObjectCountName(name corev1.ResourceName) (schema.GroupResource, bool) {
	rest, ok := strings.CutPrefix(string(name), "count/")
	if !ok || rest == "" {
		return schema.GroupResource{}, false
	}
	r, g, _ := strings.Cut(rest, ".")
	return schema.GroupResource{Group: g, Resource: r}, true
}

// legacyCountNames are the older names upstream counts some objects
// under besides count/<resource>.
var legacyCountNames = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
}

// For is the evaluator of gr: pods, services and persistentvolumeclaims
// have their own; any other resource is counted by object.
func For(gr schema.GroupResource) Evaluator {
	switch gr {
	case schema.GroupResource{Resource: "pods"}:
		return pods{}
	case schema.GroupResource{Resource: "services"}:
		return services{}
	case schema.GroupResource{Resource: "persistentvolumeclaims"}:
		return claims{}
	}
	return ObjectCount(gr)
}

// Evaluators are the evaluators whose usage a quota limiting names counts:
// the three with their own resources and the object counts named.
func Evaluators(names []corev1.ResourceName) []Evaluator {
	var out []Evaluator
	seen := map[schema.GroupResource]bool{}
	add := func(e Evaluator) {
		if !seen[e.GroupResource()] && len(e.MatchingResources(names)) > 0 {
			seen[e.GroupResource()] = true
			out = append(out, e)
		}
	}
	add(pods{})
	add(services{})
	add(claims{})
	for gr := range legacyCountNames {
		add(ObjectCount(gr))
	}
	for _, n := range names {
		if gr, ok := ParseObjectCountName(n); ok {
			add(For(gr))
		}
	}
	return out
}

// ScopeSelectors are a quota's scopes as selector requirements: each of
// spec.scopes as Exists, then spec.scopeSelector's expressions.
func ScopeSelectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// Matches reports whether q constrains obj: it limits a resource e counts
// and obj is in every one of its scopes. A quota's limits are status.hard.
func Matches(e Evaluator, q *corev1.ResourceQuota, obj runtime.Object) (bool, error) {
	if len(e.MatchingResources(Names(q.Status.Hard))) == 0 {
		return false, nil
	}
	return InScopes(e, q, obj)
}

// InScopes reports whether obj is in every scope of q.
func InScopes(e Evaluator, q *corev1.ResourceQuota, obj runtime.Object) (bool, error) {
	for _, sel := range ScopeSelectors(q) {
		ok, err := e.MatchesScope(sel, obj)
		if err != nil {
			return false, fmt.Errorf("error matching scopes of quota %s, err: %v", q.Name, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// Used is what the objects of the namespace use of what q limits (its
// spec.hard): for each evaluator counting one of q's resources, the sum of
// the usage of the objects list gives for it that are in q's scopes, as
// the resource quota controller records it in status.used. Every
// resource an evaluator counts has a value, zero if nothing uses it.
func Used(q *corev1.ResourceQuota, list func(schema.GroupResource) ([]runtime.Object, error), now time.Time) (corev1.ResourceList, error) {
	hard := Names(q.Spec.Hard)
	used := corev1.ResourceList{}
	for _, e := range Evaluators(hard) {
		names := e.MatchingResources(hard)
		for _, n := range names {
			used[n] = zeroFor(q.Spec.Hard[n])
		}
		objs, err := list(e.GroupResource())
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			ok, err := InScopes(e, q, obj)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			u, err := e.Usage(obj, now)
			if err != nil {
				return nil, err
			}
			used = Add(used, Mask(u, names))
		}
	}
	return used, nil
}

// ---- object counts ----

type objectCount struct{ gr schema.GroupResource }

// ObjectCount is the evaluator that counts gr's objects, under
// count/<resource>.<group> (and the older name, for configmaps, secrets,
// resourcequotas and replicationcontrollers).
func ObjectCount(gr schema.GroupResource) Evaluator { return objectCount{gr} }

func (o objectCount) GroupResource() schema.GroupResource { return o.gr }

// Handles: only creates add an object.
func (o objectCount) Handles(op, subresource string, _, _ runtime.Object) bool {
	return subresource == "" && op == Create
}

func (o objectCount) names() []corev1.ResourceName {
	names := []corev1.ResourceName{ObjectCountName(o.gr)}
	if legacy, ok := legacyCountNames[o.gr]; ok {
		names = append(names, legacy)
	}
	return names
}

func (o objectCount) MatchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	return intersect(names, o.names())
}

func (o objectCount) MatchesScope(corev1.ScopedResourceSelectorRequirement, runtime.Object) (bool, error) {
	return false, nil
}

func (o objectCount) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

func (o objectCount) Usage(runtime.Object, time.Time) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, n := range o.names() {
		out[n] = one()
	}
	return out, nil
}

// zeroFor is a zero in the format of q.
func zeroFor(q resource.Quantity) resource.Quantity { return *resource.NewQuantity(0, q.Format) }
