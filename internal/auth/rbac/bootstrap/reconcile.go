package bootstrap

import (
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// Op is what reconciliation does with one object.
type Op string

const (
	// Create: the object is missing; create Object.
	Create Op = "create"
	// Update: write Object, the existing object (same resourceVersion) with
	// what it lacked of the default added.
	Update Op = "update"
	// Recreate: a binding's roleRef differs from the default's and a roleRef
	// cannot change; delete Existing (with its UID as precondition) and
	// create Object.
	Recreate Op = "recreate"
	// Skip: the existing object differs from the default but is annotated
	// rbac.authorization.kubernetes.io/autoupdate=false; write nothing.
	// Upstream logs a warning naming what is missing.
	Skip Op = "skip"
)

// Action is one write reconciliation asks for (or, for Skip, declines).
// Existing, and Object for Skip, share memory with the objects passed to
// Reconcile; do not modify them.
type Action[T any] struct {
	Op Op
	// Object is what to write: the default (Create, Recreate) or the
	// existing object with the default's missing parts added (Update). For
	// Skip it is the existing object, unchanged.
	Object T
	// Existing is the stored object the action replaces (nil for Create).
	Existing *T
	// What the existing object lacked (Update, Skip): rules, broken down to
	// one verb on one resource as upstream appends them; aggregation
	// selectors; subjects.
	MissingRules     []rbacv1.PolicyRule
	MissingSelectors []metav1.LabelSelector
	MissingSubjects  []rbacv1.Subject
}

// Plan is the writes that bring a cluster's RBAC objects up to the default
// policy, in the default policy's order. Writing Roles and RoleBindings needs
// their namespace to exist (upstream creates kube-system and kube-public if
// they are missing).
type Plan struct {
	ClusterRoles        []Action[rbacv1.ClusterRole]
	ClusterRoleBindings []Action[rbacv1.ClusterRoleBinding]
	Roles               []Action[rbacv1.Role]
	RoleBindings        []Action[rbacv1.RoleBinding]
}

// Empty reports whether the plan has nothing to write or skip.
func (p Plan) Empty() bool {
	return len(p.ClusterRoles)+len(p.ClusterRoleBindings)+len(p.Roles)+len(p.RoleBindings) == 0
}

// Reconcile compares what a cluster holds (existing: at least every object
// named in desired that exists) with the desired policy, as upstream's API
// server does at start (and `kubectl auth reconcile` without
// --remove-extra-permissions/--remove-extra-subjects):
//
//   - a missing object is created;
//   - an existing object whose autoupdate annotation is "false" is left
//     alone (a missing annotation counts as "true", and is added);
//   - otherwise it gains the desired labels and annotations it lacks (its
//     own values win where both have a key), the desired rules it does not
//     already cover, the desired aggregation selectors it lacks, and the
//     desired subjects it lacks. Nothing is removed, except an aggregation
//     rule the desired role does not have. An aggregated ClusterRole's rules
//     are the aggregation controller's: the desired one has none, so
//     reconciliation never touches them;
//   - a binding whose roleRef differs is deleted and recreated (unless
//     autoupdate is "false" on it).
//
// Two upgrade steps of upstream come first: if system:aggregate-to-admin,
// -edit or -view is missing while admin, edit or view exists without an
// aggregation rule (a role from before aggregation), the new part starts as a
// copy of the old role, so customizations carry over; and if
// system:public-info-viewer's binding is missing while system:discovery's
// exists, it starts with system:discovery's subjects, labels and annotations.
func Reconcile(existing, desired Policy) Plan {
	clusterRoles := index(existing.ClusterRoles, func(r rbacv1.ClusterRole) string { return r.Name })
	clusterRoleBindings := index(existing.ClusterRoleBindings, func(b rbacv1.ClusterRoleBinding) string { return b.Name })
	roles := index(existing.Roles, func(r rbacv1.Role) string { return r.Namespace + "/" + r.Name })
	roleBindings := index(existing.RoleBindings, func(b rbacv1.RoleBinding) string { return b.Namespace + "/" + b.Name })

	var plan Plan
	primedRoles := primeAggregatedClusterRoles(clusterRoles, desired.ClusterRoles)
	for _, want := range desired.ClusterRoles {
		if a, ok := plan1(clusterRoles[want.Name], primedRoles[want.Name], want, reconcileClusterRole); ok {
			plan.ClusterRoles = append(plan.ClusterRoles, a)
		}
	}
	primedBindings := primeSplitClusterRoleBindings(clusterRoleBindings, desired.ClusterRoleBindings)
	for _, want := range desired.ClusterRoleBindings {
		if a, ok := plan1(clusterRoleBindings[want.Name], primedBindings[want.Name], want, reconcileClusterRoleBinding); ok {
			plan.ClusterRoleBindings = append(plan.ClusterRoleBindings, a)
		}
	}
	for _, want := range desired.Roles {
		if a, ok := plan1(roles[want.Namespace+"/"+want.Name], nil, want, reconcileRole); ok {
			plan.Roles = append(plan.Roles, a)
		}
	}
	for _, want := range desired.RoleBindings {
		if a, ok := plan1(roleBindings[want.Namespace+"/"+want.Name], nil, want, reconcileRoleBinding); ok {
			plan.RoleBindings = append(plan.RoleBindings, a)
		}
	}
	return plan
}

// plan1 decides one desired object: create it if nothing exists (starting
// from primed, when an upgrade step supplied one), else reconcile the
// existing one.
func plan1[T any](have, primed *T, want T, reconcile func(have, want T) (Action[T], bool)) (Action[T], bool) {
	switch {
	case have != nil:
		return reconcile(*have, want)
	case primed != nil:
		a, changed := reconcile(*primed, want)
		obj := a.Object
		if !changed || a.Op == Skip || a.Op == Recreate {
			obj = *primed
		}
		return Action[T]{Op: Create, Object: obj}, true
	default:
		return Action[T]{Op: Create, Object: want}, true
	}
}

func index[T any](objs []T, key func(T) string) map[string]*T {
	m := make(map[string]*T, len(objs))
	for i := range objs {
		m[key(objs[i])] = &objs[i]
	}
	return m
}

// protected reports whether an object opted out of reconciliation.
func protected(m metav1.ObjectMeta) bool {
	return m.Annotations[AutoUpdateAnnotation] == "false"
}

// mergeMeta adds to have's labels and annotations those of want it lacks;
// have's values win. It reports whether anything was added.
func mergeMeta(have *metav1.ObjectMeta, want metav1.ObjectMeta) bool {
	labels, annotations := union(want.Labels, have.Labels), union(want.Annotations, have.Annotations)
	changed := !reflect.DeepEqual(labels, have.Labels) || !reflect.DeepEqual(annotations, have.Annotations)
	have.Labels, have.Annotations = labels, annotations
	return changed
}

// union is the keys of both maps, b's values winning; nil if both are nil.
func union(a, b map[string]string) map[string]string {
	if a == nil && b == nil {
		return nil
	}
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// reconcileClusterRole is upstream's role reconciliation of one stored role
// against its default. It reports false when nothing is to be done.
func reconcileClusterRole(have, want rbacv1.ClusterRole) (Action[rbacv1.ClusterRole], bool) {
	out := *have.DeepCopy()
	changed := mergeMeta(&out.ObjectMeta, want.ObjectMeta)

	// Rules: add what the existing rules do not cover, as one-verb,
	// one-resource rules. Extra rules stay.
	var missingRules []rbacv1.PolicyRule
	if covered, uncovered := validation.Covers(have.Rules, want.Rules); !covered {
		missingRules = uncovered
	}
	if len(missingRules) > 0 {
		out.Rules = append(out.Rules, missingRules...)
		changed = true
	}

	var missingSelectors []metav1.LabelSelector
	switch {
	case want.AggregationRule == nil && have.AggregationRule != nil:
		out.AggregationRule = nil
		changed = true
	case want.AggregationRule != nil:
		missingSelectors = missingLabelSelectors(have.AggregationRule, want.AggregationRule.ClusterRoleSelectors)
		if len(missingSelectors) > 0 {
			if out.AggregationRule == nil {
				out.AggregationRule = &rbacv1.AggregationRule{}
			}
			out.AggregationRule.ClusterRoleSelectors = append(out.AggregationRule.ClusterRoleSelectors, missingSelectors...)
			changed = true
		}
	}

	if !changed {
		return Action[rbacv1.ClusterRole]{}, false
	}
	a := Action[rbacv1.ClusterRole]{Op: Update, Object: out, Existing: &have, MissingRules: missingRules, MissingSelectors: missingSelectors}
	if protected(have.ObjectMeta) {
		a.Op, a.Object = Skip, have
	}
	return a, true
}

func missingLabelSelectors(have *rbacv1.AggregationRule, want []metav1.LabelSelector) []metav1.LabelSelector {
	var missing []metav1.LabelSelector
	for _, w := range want {
		found := false
		if have != nil {
			for _, h := range have.ClusterRoleSelectors {
				if equality.Semantic.DeepEqual(h, w) {
					found = true
					break
				}
			}
		}
		if !found {
			missing = append(missing, w)
		}
	}
	return missing
}

// reconcileClusterRoleBinding is upstream's binding reconciliation of one
// stored binding against its default.
func reconcileClusterRoleBinding(have, want rbacv1.ClusterRoleBinding) (Action[rbacv1.ClusterRoleBinding], bool) {
	if have.RoleRef != want.RoleRef {
		a := Action[rbacv1.ClusterRoleBinding]{Op: Recreate, Object: want, Existing: &have}
		if protected(have.ObjectMeta) {
			a.Op, a.Object = Skip, have
		}
		return a, true
	}

	out := *have.DeepCopy()
	changed := mergeMeta(&out.ObjectMeta, want.ObjectMeta)
	var missing []rbacv1.Subject
	for _, s := range want.Subjects {
		if !containsSubject(have.Subjects, s) && !containsSubject(missing, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		out.Subjects = append(out.Subjects, missing...)
		changed = true
	}

	if !changed {
		return Action[rbacv1.ClusterRoleBinding]{}, false
	}
	a := Action[rbacv1.ClusterRoleBinding]{Op: Update, Object: out, Existing: &have, MissingSubjects: missing}
	if protected(have.ObjectMeta) {
		a.Op, a.Object = Skip, have
	}
	return a, true
}

func containsSubject(list []rbacv1.Subject, s rbacv1.Subject) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A Role reconciles as a ClusterRole without aggregation, a RoleBinding as a
// ClusterRoleBinding: the same fields, in a namespace.

func reconcileRole(have, want rbacv1.Role) (Action[rbacv1.Role], bool) {
	asCluster := func(r rbacv1.Role) rbacv1.ClusterRole {
		return rbacv1.ClusterRole{ObjectMeta: r.ObjectMeta, Rules: r.Rules}
	}
	a, ok := reconcileClusterRole(asCluster(have), asCluster(want))
	if !ok {
		return Action[rbacv1.Role]{}, false
	}
	out := Action[rbacv1.Role]{
		Op:           a.Op,
		Object:       rbacv1.Role{ObjectMeta: a.Object.ObjectMeta, Rules: a.Object.Rules},
		Existing:     &have,
		MissingRules: a.MissingRules,
	}
	if a.Op == Skip {
		out.Object = have
	}
	return out, true
}

func reconcileRoleBinding(have, want rbacv1.RoleBinding) (Action[rbacv1.RoleBinding], bool) {
	asCluster := func(b rbacv1.RoleBinding) rbacv1.ClusterRoleBinding {
		return rbacv1.ClusterRoleBinding{ObjectMeta: b.ObjectMeta, Subjects: b.Subjects, RoleRef: b.RoleRef}
	}
	a, ok := reconcileClusterRoleBinding(asCluster(have), asCluster(want))
	if !ok {
		return Action[rbacv1.RoleBinding]{}, false
	}
	out := Action[rbacv1.RoleBinding]{
		Op:              a.Op,
		Object:          rbacv1.RoleBinding{ObjectMeta: a.Object.ObjectMeta, Subjects: a.Object.Subjects, RoleRef: a.Object.RoleRef},
		Existing:        &have,
		MissingSubjects: a.MissingSubjects,
	}
	if a.Op == Skip {
		out.Object = have
	}
	return out, true
}

// Upstream's upgrade steps (see Reconcile).

// aggregatedFrom maps each aggregated part to the role it was split from.
var aggregatedFrom = map[string]string{
	"system:aggregate-to-admin": "admin",
	"system:aggregate-to-edit":  "edit",
	"system:aggregate-to-view":  "view",
}

// splitFrom maps a binding to the one it was split from.
var splitFrom = map[string]string{
	"system:public-info-viewer": "system:discovery",
}

// primeAggregatedClusterRoles returns, by name, the starting point of each
// missing aggregated part whose old role exists without aggregation: a copy
// of that role under the new name.
func primeAggregatedClusterRoles(existing map[string]*rbacv1.ClusterRole, desired []rbacv1.ClusterRole) map[string]*rbacv1.ClusterRole {
	primed := map[string]*rbacv1.ClusterRole{}
	for _, want := range desired {
		oldName, ok := aggregatedFrom[want.Name]
		if !ok || existing[want.Name] != nil {
			continue
		}
		old := existing[oldName]
		if old == nil || old.AggregationRule != nil {
			continue
		}
		primed[want.Name] = &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{
				Name:        want.Name,
				Labels:      union(nil, old.Labels),
				Annotations: union(nil, old.Annotations),
			},
			Rules: append([]rbacv1.PolicyRule(nil), old.Rules...),
		}
	}
	return primed
}

// primeSplitClusterRoleBindings returns, by name, the starting point of each
// missing split binding whose source exists: the default with the source's
// subjects, labels and annotations.
func primeSplitClusterRoleBindings(existing map[string]*rbacv1.ClusterRoleBinding, desired []rbacv1.ClusterRoleBinding) map[string]*rbacv1.ClusterRoleBinding {
	primed := map[string]*rbacv1.ClusterRoleBinding{}
	for _, want := range desired {
		srcName, ok := splitFrom[want.Name]
		if !ok || existing[want.Name] != nil {
			continue
		}
		src := existing[srcName]
		if src == nil {
			continue
		}
		b := want.DeepCopy()
		b.Subjects = append([]rbacv1.Subject(nil), src.Subjects...)
		b.Labels = union(nil, src.Labels)
		b.Annotations = union(nil, src.Annotations)
		primed[want.Name] = b
	}
	return primed
}
