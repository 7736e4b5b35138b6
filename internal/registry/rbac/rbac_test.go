package rbac

import (
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func resource(t *testing.T, plural string) registry.Resource {
	t.Helper()
	for _, r := range Resources() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %q", plural)
	return registry.Resource{}
}

func expectErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%s: %s: %s", e.Field, e.Type, e.Detail))
	}
	if len(got) != len(want) {
		t.Fatalf("got errors %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func TestRules(t *testing.T) {
	tests := []struct {
		name   string
		plural string
		rules  []rbacv1.PolicyRule
		want   []string
	}{
		{name: "resource rule", plural: "roles", rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}},
		{
			name: "no verbs", plural: "roles",
			rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}},
			want:  []string{"rules[0].verbs: Required value: verbs must contain at least one value"},
		},
		{
			name: "no groups or resources", plural: "clusterroles",
			rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}}},
			want: []string{
				"rules[0].apiGroups: Required value: resource rules must supply at least one api group",
				"rules[0].resources: Required value: resource rules must supply at least one resource",
			},
		},
		{name: "non-resource URL in cluster role", plural: "clusterroles", rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}},
		{
			name: "non-resource URL in role", plural: "roles",
			rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
			want:  []string{"rules[0].nonResourceURLs: Invalid value: namespaced rules cannot apply to non-resource URLs"},
		},
		{
			name: "mixed rule", plural: "clusterroles",
			rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}, Resources: []string{"pods"}}},
			want:  []string{"rules[0].nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var obj runtime.Object = &rbacv1.Role{Rules: tc.rules}
			if tc.plural == "clusterroles" {
				obj = &rbacv1.ClusterRole{Rules: tc.rules}
			}
			expectErrors(t, resource(t, tc.plural).Strategy.Validate(obj), tc.want...)
		})
	}
}

func TestAggregationRule(t *testing.T) {
	st := resource(t, "clusterroles").Strategy
	expectErrors(t, st.Validate(&rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{}}),
		"aggregationRule.clusterRoleSelectors: Required value")
	expectErrors(t, st.Validate(&rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"rbac.example.com/aggregate-to-admin": "true"}}},
	}}))
}

func TestNames(t *testing.T) {
	st := resource(t, "clusterroles").Strategy
	if msgs := st.ValidateName("system:controller:job-controller", false); len(msgs) != 0 {
		t.Errorf("system name rejected: %q", msgs)
	}
	if msgs := st.ValidateName("a/b", false); len(msgs) == 0 {
		t.Errorf("name with a slash accepted")
	}
}

func TestBindings(t *testing.T) {
	rb := resource(t, "rolebindings").Strategy
	crb := resource(t, "clusterrolebindings").Strategy

	// Defaults fill the API groups.
	b := &rbacv1.RoleBinding{
		RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "devs"}, {Kind: "ServiceAccount", Name: "default"}},
	}
	rb.Default(b)
	if b.RoleRef.APIGroup != rbacv1.GroupName || b.Subjects[0].APIGroup != rbacv1.GroupName ||
		b.Subjects[1].APIGroup != rbacv1.GroupName || b.Subjects[2].APIGroup != "" {
		t.Fatalf("defaulted binding = %+v", b)
	}
	expectErrors(t, rb.Validate(b))

	tests := []struct {
		name string
		st   func() field.ErrorList
		want []string
	}{
		{
			name: "unknown subject kind",
			st: func() field.ErrorList {
				return rb.Validate(&rbacv1.RoleBinding{RoleRef: b.RoleRef, Subjects: []rbacv1.Subject{{Kind: "Robot", Name: "r2"}}})
			},
			want: []string{`subjects[0].kind: Unsupported value: supported values: "ServiceAccount", "User", "Group"`},
		},
		{
			name: "cluster binding to a Role",
			st: func() field.ErrorList {
				return crb.Validate(&rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "x"}})
			},
			want: []string{`roleRef.kind: Unsupported value: supported values: "ClusterRole"`},
		},
		{
			name: "cluster binding to a service account without namespace",
			st: func() field.ErrorList {
				return crb.Validate(&rbacv1.ClusterRoleBinding{
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "x"},
					Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}},
				})
			},
			want: []string{"subjects[0].namespace: Required value"},
		},
		{
			name: "missing role name and wrong group",
			st: func() field.ErrorList {
				return rb.Validate(&rbacv1.RoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: "example.com", Kind: "Role"}})
			},
			want: []string{`roleRef.apiGroup: Unsupported value: supported values: "rbac.authorization.k8s.io"`, "roleRef.name: Required value"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, tc.st(), tc.want...) })
	}

	// roleRef never changes.
	changed := b.DeepCopy()
	changed.RoleRef.Name = "writer"
	expectErrors(t, rb.ValidateUpdate(changed, b), "roleRef: Invalid value: cannot change roleRef")
	moreSubjects := b.DeepCopy()
	moreSubjects.Subjects = append(moreSubjects.Subjects, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "bob"})
	expectErrors(t, rb.ValidateUpdate(moreSubjects, b))
}
