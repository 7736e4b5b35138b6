package clusterroleaggregation

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// plan is the rules role should have: the rules of every other ClusterRole
// one of its aggregationRule's selectors matches, in name order, each rule
// once. write is false when role has them already (or has no
// aggregationRule). A selector that does not parse matches nothing.
func plan(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) (rules []rbacv1.PolicyRule, write bool) {
	if role.AggregationRule == nil {
		return nil, false
	}
	var selectors []labels.Selector
	for i := range role.AggregationRule.ClusterRoleSelectors {
		if s, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i]); err == nil && !s.Empty() {
			selectors = append(selectors, s)
		}
	}
	sources := slices.Clone(all)
	slices.SortFunc(sources, func(a, b *rbacv1.ClusterRole) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	rules = []rbacv1.PolicyRule{}
	for _, src := range sources {
		if src.Name == role.Name || !slices.ContainsFunc(selectors, func(s labels.Selector) bool { return s.Matches(labels.Set(src.Labels)) }) {
			continue
		}
		for _, r := range src.Rules {
			if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
				rules = append(rules, r)
			}
		}
	}
	if equality.Semantic.DeepEqual(rules, role.Rules) || len(rules) == 0 && len(role.Rules) == 0 {
		return nil, false
	}
	return rules, true
}
