package auth

import (
	"context"
	"errors"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

type listing struct{ rules []rbacv1.PolicyRule }

func (listing) Authorize(context.Context, Attributes) (Decision, string, error) {
	return NoOpinion, "", nil
}
func (l listing) RulesFor(*User, string) ([]rbacv1.PolicyRule, error) { return l.rules, nil }

// nodeRules cannot list the rules of nodes, as the Node authorizer.
type nodeRules struct{}

func (nodeRules) Authorize(context.Context, Attributes) (Decision, string, error) {
	return NoOpinion, "", nil
}

func (nodeRules) RulesFor(u *User, _ string) ([]rbacv1.PolicyRule, error) {
	if NodeName(u) != "" {
		return nil, errors.New("node authorizer does not support user rule resolution")
	}
	return nil, nil
}

func TestChainRulesFor(t *testing.T) {
	podsRead := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	chain := Chain{MastersAuthorizer{}, nodeRules{}, listing{[]rbacv1.PolicyRule{podsRead}}}
	admin := &User{Name: "admin", Groups: []string{GroupMasters}}
	node := &User{Name: "system:node:n1", Groups: []string{GroupNodes}}
	alice := &User{Name: "alice"}
	if rules, err := chain.RulesFor(admin, "ns"); err != nil || len(rules) != 3 || rules[0].Verbs[0] != "*" {
		t.Errorf("admin: %v %v", rules, err)
	}
	if rules, err := chain.RulesFor(alice, "ns"); err != nil || len(rules) != 1 {
		t.Errorf("alice: %v %v", rules, err)
	}
	if rules, err := chain.RulesFor(node, "ns"); err == nil || len(rules) != 1 {
		t.Errorf("a node's rules are complete: %v %v", rules, err)
	}
	withFixed := append(chain, PublicInfoAuthorizer{})
	if _, err := withFixed.RulesFor(alice, "ns"); !errors.Is(err, ErrRulesIncomplete) {
		t.Errorf("an authorizer that cannot list did not make the rules incomplete: %v", err)
	}
}
