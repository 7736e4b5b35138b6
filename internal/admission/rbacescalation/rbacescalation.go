package rbacescalation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-helpers/auth/rbac/validation"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
)

// Name is the plugin's name.
const Name = "RBACEscalation"

// Rules says what rules a user holds in a namespace ("" for the
// cluster-wide ones) and what rules a role a binding refers to has: the
// RBAC authorizer.
type Rules interface {
	RulesFor(u *auth.User, namespace string) ([]rbacv1.PolicyRule, error)
	RoleRefRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error)
}

var (
	roles               = schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"}
	clusterRoles        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}
	roleBindings        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "rolebindings"}
	clusterRoleBindings = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrolebindings"}
)

// fullAuthority is what a ClusterRole with an aggregationRule may grant:
// anything, since any role may be aggregated into it later.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// New is the plugin (validating creates and updates) over the server's authorizer (for the escalate and
// bind verbs) and RBAC's rules.
func New(authz auth.Authorizer, rules Rules) admission.Plugin {
	c := &checker{authz: authz, rules: rules}
	return admission.Plugin{
		Name:       Name,
		Resources:  []schema.GroupResource{roles, clusterRoles, roleBindings, clusterRoleBindings},
		Operations: []admission.Operation{admission.Create, admission.Update},
		Validate: func(ctx context.Context, a *admission.Attributes) error {
			return c.check(ctx, a.User, a.Object)
		},
	}
}

type checker struct {
	authz auth.Authorizer
	rules Rules
}

func (c *checker) check(ctx context.Context, u *auth.User, obj runtime.Object) error {
	if u == nil {
		return nil
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		if c.allowed(ctx, u, "escalate", roles, o.Namespace, o.Name) {
			return nil
		}
		return c.cover(u, roles, o.Namespace, o.Name, o.Rules)
	case *rbacv1.ClusterRole:
		if c.allowed(ctx, u, "escalate", clusterRoles, "", o.Name) {
			return nil
		}
		rules := o.Rules
		if o.AggregationRule != nil {
			rules = fullAuthority
		}
		return c.cover(u, clusterRoles, "", o.Name, rules)
	case *rbacv1.RoleBinding:
		return c.bind(ctx, u, roleBindings, o.Namespace, o.Name, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return c.bind(ctx, u, clusterRoleBindings, "", o.Name, o.RoleRef)
	}
	return nil
}

// bind lets u bind ref with the bind verb on the role, or if u holds the
// role's rules where the binding grants them.
func (c *checker) bind(ctx context.Context, u *auth.User, gr schema.GroupResource, namespace, name string, ref rbacv1.RoleRef) error {
	refResource := clusterRoles
	if ref.Kind == "Role" {
		refResource = roles
	}
	if c.allowed(ctx, u, "bind", refResource, namespace, ref.Name) {
		return nil
	}
	rules, err := c.rules.RoleRefRules(ref, namespace)
	if err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return c.cover(u, gr, namespace, name, rules)
}

func (c *checker) allowed(ctx context.Context, u *auth.User, verb string, gr schema.GroupResource, namespace, name string) bool {
	d, _, err := c.authz.Authorize(ctx, auth.Attributes{User: u, Verb: verb, IsResource: true, APIGroup: gr.Group,
		APIVersion: "v1", Resource: gr.Resource, Namespace: namespace, Name: name})
	return err == nil && d == auth.Allow
}

// cover refuses, with upstream's message, rules u does not hold.
func (c *checker) cover(u *auth.User, gr schema.GroupResource, namespace, name string, wanted []rbacv1.PolicyRule) error {
	held, resolveErr := c.rules.RulesFor(u, namespace)
	ok, missing := validation.Covers(held, wanted)
	if ok {
		return nil
	}
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		u.Name, u.Groups, strings.Join(describe(missing), "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", resolveErr)
	}
	return apierrors.NewForbidden(gr, name, fmt.Errorf("%s", msg))
}

// describe merges the missing pieces that differ only in verb and writes
// each as upstream's compact form, sorted.
func describe(rules []rbacv1.PolicyRule) []string {
	var merged []rbacv1.PolicyRule
	for _, r := range rules {
		i := slices.IndexFunc(merged, func(m rbacv1.PolicyRule) bool {
			return slices.Equal(m.APIGroups, r.APIGroups) && slices.Equal(m.Resources, r.Resources) &&
				slices.Equal(m.ResourceNames, r.ResourceNames) && slices.Equal(m.NonResourceURLs, r.NonResourceURLs)
		})
		if i < 0 {
			merged = append(merged, *r.DeepCopy())
			continue
		}
		for _, v := range r.Verbs {
			if !slices.Contains(merged[i].Verbs, v) {
				merged[i].Verbs = append(merged[i].Verbs, v)
			}
		}
	}
	out := make([]string, 0, len(merged))
	for _, r := range merged {
		out = append(out, compact(r))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// compact is a rule as upstream writes it in messages:
// {APIGroups:["apps"], Resources:["deployments"], Verbs:["create"]}.
func compact(r rbacv1.PolicyRule) string {
	var parts []string
	for _, f := range []struct {
		name string
		v    []string
	}{{"APIGroups", r.APIGroups}, {"Resources", r.Resources}, {"ResourceNames", r.ResourceNames}, {"NonResourceURLs", r.NonResourceURLs}, {"Verbs", r.Verbs}} {
		if len(f.v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", f.name, f.v))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
