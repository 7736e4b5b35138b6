package clusterroleaggregation

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	readPods    = rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	readWidgets = rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
)

func role(name string, lbls map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Rules: rules}
}

func aggregated(name string, rules []rbacv1.PolicyRule, selectors ...map[string]string) *rbacv1.ClusterRole {
	r := role(name, nil, rules...)
	r.AggregationRule = &rbacv1.AggregationRule{}
	for _, s := range selectors {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: s})
	}
	return r
}

var toView = map[string]string{"rbac.example/aggregate-to-view": "true"}

func TestPlan(t *testing.T) {
	b := role("b-pods", toView, readPods)
	a := role("a-widgets", toView, readWidgets, readPods) // readPods twice: once in the result
	other := role("other", map[string]string{"x": "y"}, rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
	for _, tt := range []struct {
		name  string
		role  *rbacv1.ClusterRole
		all   []*rbacv1.ClusterRole
		want  []rbacv1.PolicyRule
		write bool
	}{
		{"not aggregated", role("plain", nil), []*rbacv1.ClusterRole{a, b}, nil, false},
		{"fills in name order, each rule once", aggregated("view", nil, toView), []*rbacv1.ClusterRole{b, other, a}, []rbacv1.PolicyRule{readWidgets, readPods}, true},
		{"already right", aggregated("view", []rbacv1.PolicyRule{readWidgets, readPods}, toView), []*rbacv1.ClusterRole{a, b}, nil, false},
		{"a source gone takes its rules", aggregated("view", []rbacv1.PolicyRule{readWidgets, readPods}, toView), []*rbacv1.ClusterRole{b}, []rbacv1.PolicyRule{readPods}, true},
		{"nothing matches: no rules", aggregated("view", []rbacv1.PolicyRule{readPods}, toView), []*rbacv1.ClusterRole{other}, []rbacv1.PolicyRule{}, true},
		{"empty selector matches nothing", aggregated("view", nil, map[string]string{}), []*rbacv1.ClusterRole{a, other}, nil, false},
		{"not itself", func() *rbacv1.ClusterRole { r := aggregated("view", nil, toView); r.Labels = toView; return r }(), nil, nil, false},
	} {
		got, write := plan(tt.role, append(tt.all, tt.role))
		if write != tt.write || !equality.Semantic.DeepEqual(got, tt.want) {
			t.Errorf("%s: plan = %v, %v; want %v, %v", tt.name, got, write, tt.want, tt.write)
		}
	}
}
