package auth

import (
	"errors"

	rbacv1 "k8s.io/api/rbac/v1"
)

// RuleResolver is an authorizer that can also list what it grants a user
// in a namespace ("" for what holds cluster-wide): what
// SelfSubjectRulesReview (`kubectl auth can-i --list`) answers.
type RuleResolver interface {
	RulesFor(u *User, namespace string) ([]rbacv1.PolicyRule, error)
}

// fullAuthority is everything, as rules.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// RulesFor lists everything to members of system:masters.
func (MastersAuthorizer) RulesFor(u *User, _ string) ([]rbacv1.PolicyRule, error) {
	if u != nil && u.InGroup(GroupMasters) {
		return fullAuthority, nil
	}
	return nil, nil
}

// ErrRulesIncomplete says a chain's rules for a user leave out what an
// authorizer in it that cannot list its rules may allow.
var ErrRulesIncomplete = errors.New("an authorizer in the chain cannot list the rules it grants")

// RulesFor is the rules of every authorizer in c that can list them; the
// error is ErrRulesIncomplete (with the rules there are) when one cannot.
func (c Chain) RulesFor(u *User, namespace string) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	for _, a := range c {
		r, ok := a.(RuleResolver)
		if !ok {
			errs = append(errs, ErrRulesIncomplete)
			continue
		}
		rs, err := r.RulesFor(u, namespace)
		rules = append(rules, rs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return rules, errors.Join(errs...)
}
