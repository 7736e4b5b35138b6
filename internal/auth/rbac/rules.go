package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"plainkube.dev/plainkube/internal/auth"
)

// RuleAllows reports whether rule grants the request described by a.
func RuleAllows(a auth.Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, a.Verb) {
		return false
	}
	if !a.IsResource {
		return nonResourceURLMatches(rule, a.Path)
	}
	combined := a.Resource
	if a.Subresource != "" {
		combined += "/" + a.Subresource
	}
	return apiGroupMatches(rule, a.APIGroup) &&
		resourceMatches(rule, combined, a.Subresource) &&
		resourceNameMatches(rule, a.Name)
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// resourceMatches: "*" matches every resource and subresource; "pods"
// matches only pods, "pods/log" only that subresource, "*/scale" the scale
// subresource of every resource.
func resourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		switch {
		case r == rbacv1.ResourceAll, r == combined:
			return true
		case subresource != "" && len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && r[2:] == subresource:
			return true
		}
	}
	return false
}

// resourceNameMatches: a rule without resourceNames covers every name; one
// with them covers only requests for one of those names (so never a list
// or a create without a name).
func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

// nonResourceURLMatches: "*" matches every path, "/apis/*" every path under
// /apis/, anything else only itself.
func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		switch {
		case u == rbacv1.NonResourceAll, u == path:
			return true
		case strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")):
			return true
		}
	}
	return false
}
