package rbac

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"plainkube.dev/plainkube/internal/auth"
)

// Source is where the authorizer reads bindings and roles. The binding
// lookups take the user's index keys (userKeys) and may return bindings
// that do not name the user after all; the authorizer checks each subject.
type Source interface {
	ClusterRoleBindings(keys []string) []*rbacv1.ClusterRoleBinding
	RoleBindings(namespace string, keys []string) []*rbacv1.RoleBinding
	ClusterRole(name string) (*rbacv1.ClusterRole, error)
	Role(namespace, name string) (*rbacv1.Role, error)
}

// Authorizer is the RBAC authorizer over a Source.
type Authorizer struct{ src atomic.Pointer[Source] }

var _ auth.Authorizer = (*Authorizer)(nil)

// New returns the RBAC authorizer reading from src; with a nil src it has
// no opinion on anything until SetSource gives it one (the API server's
// authorizer exists before the informers it reads through the API).
func New(src Source) *Authorizer {
	a := &Authorizer{}
	if src != nil {
		a.SetSource(src)
	}
	return a
}

// errNoSource answers questions asked before SetSource.
var errNoSource = errors.New("RBAC: the authorizer has not read the roles and bindings yet")

// SetSource makes a read from src.
func (r *Authorizer) SetSource(src Source) { r.src.Store(&src) }

// Authorize allows a request one of the user's rules covers, with a reason
// naming the binding that allowed it; otherwise it has no opinion, and the
// reason lists what went wrong on the way (a binding whose role does not
// exist), as upstream's "RBAC: …" detail of a 403.
func (r *Authorizer) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	if a.User == nil || r.src.Load() == nil {
		return auth.NoOpinion, "", nil
	}
	var errs []error
	var allowedBy string
	r.visit(a.User, a.Namespace, func(grant string, rules []rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
			return true
		}
		for i := range rules {
			if RuleAllows(a, &rules[i]) {
				allowedBy = grant
				return false
			}
		}
		return true
	})
	if allowedBy != "" {
		return auth.Allow, "RBAC: allowed by " + allowedBy, nil
	}
	if len(errs) > 0 {
		return auth.NoOpinion, "RBAC: " + utilerrors.NewAggregate(errs).Error(), nil
	}
	return auth.NoOpinion, "", nil
}

// RulesFor is every rule u holds in namespace (cluster-wide rules
// included; namespace "" for the cluster-wide ones only), and the errors
// met reading them: what SelfSubjectRulesReview answers and what
// escalation prevention compares against.
func (r *Authorizer) RulesFor(u *auth.User, namespace string) ([]rbacv1.PolicyRule, error) {
	if r.src.Load() == nil {
		return nil, errNoSource
	}
	var rules []rbacv1.PolicyRule
	var errs []error
	r.visit(u, namespace, func(_ string, rs []rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
		}
		rules = append(rules, rs...)
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// RoleRefRules are the rules of the role ref names, for a binding in
// namespace ("" for a ClusterRoleBinding).
func (r *Authorizer) RoleRefRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	src := r.src.Load()
	if src == nil {
		return nil, errNoSource
	}
	return roleRules(*src, ref, namespace)
}

// visit calls f with the rules of every binding that names u: the
// ClusterRoleBindings, then the RoleBindings of namespace, each in name
// order, until f returns false. grant describes the binding for a reason.
func (r *Authorizer) visit(u *auth.User, namespace string, f func(grant string, rules []rbacv1.PolicyRule, err error) bool) {
	src := *r.src.Load()
	keys := userKeys(u)
	crbs := src.ClusterRoleBindings(keys)
	sort.Slice(crbs, func(i, j int) bool { return crbs[i].Name < crbs[j].Name })
	for _, b := range crbs {
		s := subjectFor(u, b.Subjects, "")
		if s == nil {
			continue
		}
		rules, err := roleRules(src, b.RoleRef, "")
		grant := fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", b.Name, b.RoleRef.Kind, b.RoleRef.Name, describe(s))
		if !f(grant, rules, err) {
			return
		}
	}
	if namespace == "" {
		return
	}
	rbs := src.RoleBindings(namespace, keys)
	sort.Slice(rbs, func(i, j int) bool { return rbs[i].Name < rbs[j].Name })
	for _, b := range rbs {
		s := subjectFor(u, b.Subjects, namespace)
		if s == nil {
			continue
		}
		rules, err := roleRules(src, b.RoleRef, namespace)
		grant := fmt.Sprintf("RoleBinding %q of %s %q to %s", b.Name+"/"+namespace, b.RoleRef.Kind, b.RoleRef.Name, describe(s))
		if !f(grant, rules, err) {
			return
		}
	}
}

// roleRules are the rules of the role ref points at: a ClusterRole, or a
// Role of namespace.
func roleRules(src Source, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "ClusterRole":
		role, err := src.ClusterRole(ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	case "Role":
		if namespace == "" {
			return nil, fmt.Errorf("a ClusterRoleBinding may not refer to Role %q", ref.Name)
		}
		role, err := src.Role(namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

func subjectFor(u *auth.User, subjects []rbacv1.Subject, bindingNamespace string) *rbacv1.Subject {
	for i := range subjects {
		if appliesTo(u, &subjects[i], bindingNamespace) {
			return &subjects[i]
		}
	}
	return nil
}

func describe(s *rbacv1.Subject) string {
	if s.Kind == rbacv1.ServiceAccountKind && s.Namespace != "" {
		return fmt.Sprintf("%s %q", s.Kind, s.Namespace+"/"+s.Name)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}
