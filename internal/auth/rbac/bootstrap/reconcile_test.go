package bootstrap

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Test fixtures: a default role/binding, and variations of a stored one.

func podReader() rbacv1.ClusterRole {
	return clusterRole("pod-reader", rule(read...).groups(coreGroup).resources("pods"))
}

func stored[T any](o T, mutate ...func(*T)) T {
	for _, m := range mutate {
		m(&o)
	}
	return o
}

func withMeta(f func(*metav1.ObjectMeta)) func(*rbacv1.ClusterRole) {
	return func(r *rbacv1.ClusterRole) { f(&r.ObjectMeta) }
}

var (
	storedMeta = withMeta(func(m *metav1.ObjectMeta) { m.ResourceVersion, m.UID = "7", "uid-1" })
	noAnnots   = withMeta(func(m *metav1.ObjectMeta) { m.Annotations = nil })
	protect    = withMeta(func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{AutoUpdateAnnotation: "false"} })
)

func withRules(rs ...ruleBuilder) func(*rbacv1.ClusterRole) {
	return func(r *rbacv1.ClusterRole) { r.Rules = rules(rs...) }
}

func TestReconcileClusterRole(t *testing.T) {
	admin := aggregatedClusterRole(defaultMeta("admin"), aggregateToAdmin)
	adminSelector := admin.AggregationRule.ClusterRoleSelectors[0]
	filledRules := rules(rule("*").groups("example.com").resources("widgets"))

	cases := []struct {
		name     string
		existing []rbacv1.ClusterRole
		desired  rbacv1.ClusterRole
		want     *Action[rbacv1.ClusterRole] // nil: nothing to do
	}{{
		name:    "missing is created",
		desired: podReader(),
		want:    &Action[rbacv1.ClusterRole]{Op: Create, Object: podReader()},
	}, {
		name:     "equal is left alone",
		existing: []rbacv1.ClusterRole{stored(podReader(), storedMeta)},
		desired:  podReader(),
	}, {
		name:     "a role of another name does not count",
		existing: []rbacv1.ClusterRole{stored(podReader(), withMeta(func(m *metav1.ObjectMeta) { m.Name = "other" }))},
		desired:  podReader(),
		want:     &Action[rbacv1.ClusterRole]{Op: Create, Object: podReader()},
	}, {
		name:     "missing annotation counts as autoupdate and is added",
		existing: []rbacv1.ClusterRole{stored(podReader(), storedMeta, noAnnots)},
		desired:  podReader(),
		want: &Action[rbacv1.ClusterRole]{
			Op:       Update,
			Object:   stored(podReader(), storedMeta),
			Existing: ptr(stored(podReader(), storedMeta, noAnnots)),
		},
	}, {
		name: "labels and annotations are added, the stored values win",
		existing: []rbacv1.ClusterRole{stored(podReader(), storedMeta, withMeta(func(m *metav1.ObjectMeta) {
			m.Labels = map[string]string{"team": "a", BootstrappingLabel: "mine"}
			m.Annotations = map[string]string{AutoUpdateAnnotation: "true", "note": "x"}
		}))},
		desired: stored(podReader(), withMeta(func(m *metav1.ObjectMeta) { m.Labels["new"] = "1" })),
		want: &Action[rbacv1.ClusterRole]{
			Op: Update,
			Object: stored(podReader(), storedMeta, withMeta(func(m *metav1.ObjectMeta) {
				m.Labels = map[string]string{"team": "a", BootstrappingLabel: "mine", "new": "1"}
				m.Annotations = map[string]string{AutoUpdateAnnotation: "true", "note": "x"}
			})),
		},
	}, {
		name: "missing rules are added one verb and resource at a time; the user's extra rules stay",
		existing: []rbacv1.ClusterRole{stored(podReader(), storedMeta, withRules(
			rule("get").groups(coreGroup).resources("pods"),
			rule("delete").groups(coreGroup).resources("secrets"),
		))},
		desired: podReader(),
		want: &Action[rbacv1.ClusterRole]{
			Op: Update,
			Object: stored(podReader(), storedMeta, withRules(
				rule("get").groups(coreGroup).resources("pods"),
				rule("delete").groups(coreGroup).resources("secrets"),
				rule("list").groups(coreGroup).resources("pods"),
				rule("watch").groups(coreGroup).resources("pods"),
			)),
			MissingRules: rules(
				rule("list").groups(coreGroup).resources("pods"),
				rule("watch").groups(coreGroup).resources("pods"),
			),
		},
	}, {
		name:     "rules covered by broader stored rules are not missing",
		existing: []rbacv1.ClusterRole{stored(podReader(), storedMeta, withRules(rule("*").groups("*").resources("*")))},
		desired:  podReader(),
	}, {
		name:     "autoupdate=false: nothing is written",
		existing: []rbacv1.ClusterRole{stored(podReader(), storedMeta, protect, withRules())},
		desired:  podReader(),
		want: &Action[rbacv1.ClusterRole]{
			Op:     Skip,
			Object: stored(podReader(), storedMeta, protect, withRules()),
			MissingRules: rules(
				rule("get").groups(coreGroup).resources("pods"),
				rule("list").groups(coreGroup).resources("pods"),
				rule("watch").groups(coreGroup).resources("pods"),
			),
		},
	}, {
		name:     "autoupdate=false and nothing missing: no action at all",
		existing: []rbacv1.ClusterRole{stored(podReader(), storedMeta, protect)},
		desired:  podReader(),
	}, {
		name: "aggregated role: the controller's rules are kept, nothing to do",
		existing: []rbacv1.ClusterRole{stored(admin, storedMeta, func(r *rbacv1.ClusterRole) {
			r.Rules = filledRules
		})},
		desired: admin,
	}, {
		name: "aggregated role: a missing selector is added, other selectors and rules kept",
		existing: []rbacv1.ClusterRole{stored(admin, storedMeta, func(r *rbacv1.ClusterRole) {
			r.Rules = filledRules
			r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"mine": "true"}}}}
		})},
		desired: admin,
		want: &Action[rbacv1.ClusterRole]{
			Op: Update,
			Object: stored(admin, storedMeta, func(r *rbacv1.ClusterRole) {
				r.Rules = filledRules
				r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
					{MatchLabels: map[string]string{"mine": "true"}}, adminSelector,
				}}
			}),
			MissingSelectors: []metav1.LabelSelector{adminSelector},
		},
	}, {
		name: "a role from before aggregation gains the aggregation rule and keeps its rules",
		existing: []rbacv1.ClusterRole{stored(admin, storedMeta, func(r *rbacv1.ClusterRole) {
			r.Rules = filledRules
			r.AggregationRule = nil
		})},
		desired: admin,
		want: &Action[rbacv1.ClusterRole]{
			Op: Update,
			Object: stored(admin, storedMeta, func(r *rbacv1.ClusterRole) {
				r.Rules = filledRules
			}),
			MissingSelectors: []metav1.LabelSelector{adminSelector},
		},
	}, {
		name: "an aggregation rule the default does not have is removed",
		existing: []rbacv1.ClusterRole{stored(podReader(), storedMeta, func(r *rbacv1.ClusterRole) {
			r.AggregationRule = admin.AggregationRule
		})},
		desired: podReader(),
		want: &Action[rbacv1.ClusterRole]{
			Op:     Update,
			Object: stored(podReader(), storedMeta),
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := Reconcile(Policy{ClusterRoles: c.existing}, Policy{ClusterRoles: []rbacv1.ClusterRole{c.desired}})
			checkActions(t, plan.ClusterRoles, c.want, c.existing)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// checkActions compares a plan's actions of one kind with want (nil: none).
// want.Existing, when nil for an Update or Skip, defaults to the one stored
// object of existing.
func checkActions[T any](t *testing.T, got []Action[T], want *Action[T], existing []T) {
	t.Helper()
	if want == nil {
		if len(got) != 0 {
			t.Fatalf("got %d actions, want none: %+v", len(got), got)
		}
		return
	}
	if len(got) != 1 {
		t.Fatalf("got %d actions, want 1: %+v", len(got), got)
	}
	w := *want
	if w.Existing == nil && w.Op != Create && len(existing) == 1 {
		w.Existing = &existing[0]
	}
	if !reflect.DeepEqual(got[0], w) {
		t.Errorf("got  %+v\nwant %+v", got[0], w)
		if got[0].Existing != nil && w.Existing != nil && !reflect.DeepEqual(*got[0].Existing, *w.Existing) {
			t.Errorf("existing: got %+v, want %+v", *got[0].Existing, *w.Existing)
		}
	}
}

func TestReconcileClusterRoleBinding(t *testing.T) {
	viewers := clusterRoleBinding("view", groupSubject("viewers"), userSubject("ann"))
	withSubjects := func(s ...rbacv1.Subject) func(*rbacv1.ClusterRoleBinding) {
		return func(b *rbacv1.ClusterRoleBinding) { b.Subjects = s }
	}
	storedB := func(b *rbacv1.ClusterRoleBinding) { b.ResourceVersion, b.UID = "9", types.UID("uid-2") }
	protectB := func(b *rbacv1.ClusterRoleBinding) {
		b.Annotations = map[string]string{AutoUpdateAnnotation: "false"}
	}
	otherRole := func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Name = "edit" }

	cases := []struct {
		name     string
		existing []rbacv1.ClusterRoleBinding
		desired  rbacv1.ClusterRoleBinding
		want     *Action[rbacv1.ClusterRoleBinding]
	}{{
		name:    "missing is created",
		desired: viewers,
		want:    &Action[rbacv1.ClusterRoleBinding]{Op: Create, Object: viewers},
	}, {
		name:     "equal is left alone",
		existing: []rbacv1.ClusterRoleBinding{stored(viewers, storedB)},
		desired:  viewers,
	}, {
		name:     "same subjects in another order are equal",
		existing: []rbacv1.ClusterRoleBinding{stored(viewers, storedB, withSubjects(userSubject("ann"), groupSubject("viewers")))},
		desired:  viewers,
	}, {
		name:     "missing subjects are added after the user's, which stay",
		existing: []rbacv1.ClusterRoleBinding{stored(viewers, storedB, withSubjects(userSubject("bob"), userSubject("ann")))},
		desired:  viewers,
		want: &Action[rbacv1.ClusterRoleBinding]{
			Op:              Update,
			Object:          stored(viewers, storedB, withSubjects(userSubject("bob"), userSubject("ann"), groupSubject("viewers"))),
			MissingSubjects: []rbacv1.Subject{groupSubject("viewers")},
		},
	}, {
		name:     "a subject of another kind with the same name is a different subject",
		existing: []rbacv1.ClusterRoleBinding{stored(viewers, storedB, withSubjects(groupSubject("ann"), groupSubject("viewers")))},
		desired:  viewers,
		want: &Action[rbacv1.ClusterRoleBinding]{
			Op:              Update,
			Object:          stored(viewers, storedB, withSubjects(groupSubject("ann"), groupSubject("viewers"), userSubject("ann"))),
			MissingSubjects: []rbacv1.Subject{userSubject("ann")},
		},
	}, {
		name:     "autoupdate=false: missing subjects are not added",
		existing: []rbacv1.ClusterRoleBinding{stored(viewers, storedB, protectB, withSubjects())},
		desired:  viewers,
		want: &Action[rbacv1.ClusterRoleBinding]{
			Op:              Skip,
			Object:          stored(viewers, storedB, protectB, withSubjects()),
			MissingSubjects: viewers.Subjects,
		},
	}, {
		name:     "a changed roleRef is recreated (roleRef is immutable)",
		existing: []rbacv1.ClusterRoleBinding{stored(viewers, storedB, otherRole)},
		desired:  viewers,
		want:     &Action[rbacv1.ClusterRoleBinding]{Op: Recreate, Object: viewers},
	}, {
		name:     "a changed roleRef under autoupdate=false is left alone",
		existing: []rbacv1.ClusterRoleBinding{stored(viewers, storedB, otherRole, protectB)},
		desired:  viewers,
		want:     &Action[rbacv1.ClusterRoleBinding]{Op: Skip, Object: stored(viewers, storedB, otherRole, protectB)},
	}, {
		name:     "a binding with no subjects (system:node) stays as the user left it",
		existing: []rbacv1.ClusterRoleBinding{stored(clusterRoleBinding("system:node", groupSubject("system:nodes")), storedB)},
		desired:  clusterRoleBinding("system:node"),
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := Reconcile(Policy{ClusterRoleBindings: c.existing}, Policy{ClusterRoleBindings: []rbacv1.ClusterRoleBinding{c.desired}})
			checkActions(t, plan.ClusterRoleBindings, c.want, c.existing)
		})
	}
}

func TestReconcileNamespaced(t *testing.T) {
	want := namespacedRole("kube-system", "r", rule("get").groups(coreGroup).resources("secrets"))
	wantB := namespacedRoleBinding("kube-system", "r", "r", userSubject("u"))
	elsewhere := namespacedRole("kube-public", "r", rule("get").groups(coreGroup).resources("secrets"))
	elsewhereB := namespacedRoleBinding("kube-public", "r", "r", userSubject("u"))

	plan := Reconcile(
		Policy{Roles: []rbacv1.Role{elsewhere}, RoleBindings: []rbacv1.RoleBinding{elsewhereB}},
		Policy{Roles: []rbacv1.Role{want}, RoleBindings: []rbacv1.RoleBinding{wantB}},
	)
	checkActions(t, plan.Roles, &Action[rbacv1.Role]{Op: Create, Object: want}, nil)
	checkActions(t, plan.RoleBindings, &Action[rbacv1.RoleBinding]{Op: Create, Object: wantB}, nil)

	// A stored Role lacking a verb and its annotation; a stored binding
	// lacking a subject.
	have := *want.DeepCopy()
	have.Annotations = nil
	have.Rules = nil
	have.ResourceVersion = "3"
	haveB := *wantB.DeepCopy()
	haveB.Subjects = []rbacv1.Subject{userSubject("other")}
	plan = Reconcile(
		Policy{Roles: []rbacv1.Role{have}, RoleBindings: []rbacv1.RoleBinding{haveB}},
		Policy{Roles: []rbacv1.Role{want}, RoleBindings: []rbacv1.RoleBinding{wantB}},
	)
	updated := *want.DeepCopy()
	updated.ResourceVersion = "3"
	checkActions(t, plan.Roles, &Action[rbacv1.Role]{Op: Update, Object: updated, MissingRules: want.Rules}, []rbacv1.Role{have})
	updatedB := *wantB.DeepCopy()
	updatedB.Subjects = []rbacv1.Subject{userSubject("other"), userSubject("u")}
	checkActions(t, plan.RoleBindings, &Action[rbacv1.RoleBinding]{Op: Update, Object: updatedB, MissingSubjects: wantB.Subjects}, []rbacv1.RoleBinding{haveB})

	// Protected.
	have.Annotations = map[string]string{AutoUpdateAnnotation: "false"}
	plan = Reconcile(Policy{Roles: []rbacv1.Role{have}}, Policy{Roles: []rbacv1.Role{want}})
	checkActions(t, plan.Roles, &Action[rbacv1.Role]{Op: Skip, Object: have, MissingRules: want.Rules}, []rbacv1.Role{have})
}

// Upstream's upgrade steps, on the real default policy.
func TestReconcileUpgradeSteps(t *testing.T) {
	d := Default()
	oldAdmin := clusterRole("admin",
		rule(readWrite...).groups(coreGroup).resources("pods"),
		rule("get").groups("example.com").resources("widgets"), // a customization
	)
	oldAdmin.ResourceVersion = "5"
	oldDiscovery := clusterRoleBinding("system:discovery", groupSubject("system:authenticated"), groupSubject("system:unauthenticated"))
	oldDiscovery.Labels["mine"] = "1"

	plan := Reconcile(Policy{
		ClusterRoles:        []rbacv1.ClusterRole{oldAdmin},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{oldDiscovery},
	}, d)

	byName := map[string]Action[rbacv1.ClusterRole]{}
	for _, a := range plan.ClusterRoles {
		byName[a.Object.Name] = a
	}
	// admin keeps its rules and gains the aggregation rule.
	if a := byName["admin"]; a.Op != Update || a.Object.AggregationRule == nil || !reflect.DeepEqual(a.Object.Rules, oldAdmin.Rules) {
		t.Errorf("admin: %+v", a)
	}
	// system:aggregate-to-admin starts as a copy of the old admin (the
	// customization carries over), plus its own label and rules.
	a := byName["system:aggregate-to-admin"]
	if a.Op != Create || a.Object.Labels[aggregateToAdmin] != "true" || a.Object.ResourceVersion != "" {
		t.Errorf("system:aggregate-to-admin: %+v", a)
	}
	if len(a.Object.Rules) < 2 || !reflect.DeepEqual(a.Object.Rules[:2], oldAdmin.Rules) {
		t.Errorf("system:aggregate-to-admin lost the old admin's rules: %+v", a.Object.Rules)
	}
	if ok, _ := coversAll(a.Object.Rules, byNameRole(d, "system:aggregate-to-admin").Rules); !ok {
		t.Errorf("system:aggregate-to-admin lacks its default rules: %+v", a.Object.Rules)
	}
	// edit and view did not exist: their parts are the defaults.
	if a := byName["system:aggregate-to-edit"]; a.Op != Create || !reflect.DeepEqual(a.Object, byNameRole(d, "system:aggregate-to-edit")) {
		t.Errorf("system:aggregate-to-edit: %+v", a)
	}

	// system:public-info-viewer starts from system:discovery's subjects and
	// metadata.
	for _, b := range plan.ClusterRoleBindings {
		switch b.Object.Name {
		case "system:public-info-viewer":
			if b.Op != Create || !reflect.DeepEqual(b.Object.Subjects, oldDiscovery.Subjects) || b.Object.Labels["mine"] != "1" ||
				b.Object.RoleRef.Name != "system:public-info-viewer" {
				t.Errorf("system:public-info-viewer: %+v", b)
			}
		case "system:discovery":
			t.Errorf("system:discovery had all default subjects; got %+v", b)
		}
	}
}

func byNameRole(p Policy, name string) rbacv1.ClusterRole {
	for _, r := range p.ClusterRoles {
		if r.Name == name {
			return r
		}
	}
	return rbacv1.ClusterRole{}
}

func coversAll(have, want []rbacv1.PolicyRule) (bool, []rbacv1.PolicyRule) {
	a, ok := reconcileClusterRole(rbacv1.ClusterRole{Rules: have}, rbacv1.ClusterRole{Rules: want})
	return !ok, a.MissingRules
}

// On an empty cluster everything is created; once the plan is written,
// reconciling again has nothing to do.
func TestReconcileDefaultReachesAFixpoint(t *testing.T) {
	d := Default()
	plan := Reconcile(Policy{}, d)
	if len(plan.ClusterRoles) != len(d.ClusterRoles) || len(plan.ClusterRoleBindings) != len(d.ClusterRoleBindings) ||
		len(plan.Roles) != len(d.Roles) || len(plan.RoleBindings) != len(d.RoleBindings) {
		t.Fatalf("plan on an empty cluster does not create everything: %d/%d/%d/%d",
			len(plan.ClusterRoles), len(plan.ClusterRoleBindings), len(plan.Roles), len(plan.RoleBindings))
	}
	written := apply(plan)
	if again := Reconcile(written, Default()); !again.Empty() {
		t.Errorf("second reconcile not empty: %+v", again)
	}

	// A cluster where a user trimmed everything (no rules, no subjects, no
	// metadata) comes back to covering the defaults in one round.
	for i := range written.ClusterRoles {
		written.ClusterRoles[i].Rules, written.ClusterRoles[i].Labels, written.ClusterRoles[i].Annotations = nil, nil, nil
	}
	for i := range written.ClusterRoleBindings {
		written.ClusterRoleBindings[i].Subjects = nil
	}
	plan = Reconcile(written, Default())
	for _, a := range plan.ClusterRoles {
		if a.Op != Update {
			t.Errorf("%s: %s, want update", a.Object.Name, a.Op)
		}
	}
	if again := Reconcile(apply(plan, written), Default()); !again.Empty() {
		t.Errorf("after one round, still to do: %+v", again)
	}
}

// apply writes a plan's objects over a cluster's (skips aside), as the API
// server would.
func apply(plan Plan, onto ...Policy) Policy {
	var p Policy
	if len(onto) > 0 {
		p = onto[0]
	}
	p.ClusterRoles = applyKind(p.ClusterRoles, plan.ClusterRoles, func(r rbacv1.ClusterRole) string { return r.Name })
	p.ClusterRoleBindings = applyKind(p.ClusterRoleBindings, plan.ClusterRoleBindings, func(b rbacv1.ClusterRoleBinding) string { return b.Name })
	p.Roles = applyKind(p.Roles, plan.Roles, roleKey)
	p.RoleBindings = applyKind(p.RoleBindings, plan.RoleBindings, roleBindingKey)
	return p
}

func applyKind[T any](objs []T, actions []Action[T], key func(T) string) []T {
	out := append([]T(nil), objs...)
	for _, a := range actions {
		if a.Op == Skip {
			continue
		}
		replaced := false
		for i := range out {
			if key(out[i]) == key(a.Object) {
				out[i], replaced = a.Object, true
			}
		}
		if !replaced {
			out = append(out, a.Object)
		}
	}
	return out
}
