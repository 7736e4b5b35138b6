package webhook

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
)

func TestRuleMatches(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	scope := func(s admissionregistrationv1.ScopeType) *admissionregistrationv1.ScopeType { return &s }
	rule := func(ops []admissionregistrationv1.OperationType, groups, versions, resources []string, s *admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources, Scope: s}}
	}
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	all := []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	for _, c := range []struct {
		name     string
		rule     admissionregistrationv1.RuleWithOperations
		op       admission.Operation
		resource schema.GroupVersionResource
		sub, ns  string
		want     bool
	}{
		{"exact", rule(create, []string{""}, []string{"v1"}, []string{"pods"}, nil), admission.Create, pods, "", "ns", true},
		{"other operation", rule(create, []string{""}, []string{"v1"}, []string{"pods"}, nil), admission.Update, pods, "", "ns", false},
		{"operation *", rule(all, []string{""}, []string{"v1"}, []string{"pods"}, nil), admission.Delete, pods, "", "ns", true},
		{"other group", rule(create, []string{"apps"}, []string{"v1"}, []string{"pods"}, nil), admission.Create, pods, "", "ns", false},
		{"group *", rule(create, []string{"*"}, []string{"*"}, []string{"deployments"}, nil), admission.Create, deployments, "", "ns", true},
		{"other version", rule(create, []string{"apps"}, []string{"v1beta1"}, []string{"deployments"}, nil), admission.Create, deployments, "", "ns", false},
		{"resource * skips subresources", rule(create, []string{"*"}, []string{"*"}, []string{"*"}, nil), admission.Create, pods, "binding", "ns", false},
		{"resource * main", rule(create, []string{"*"}, []string{"*"}, []string{"*"}, nil), admission.Create, pods, "", "ns", true},
		{"*/* subresource", rule(create, []string{"*"}, []string{"*"}, []string{"*/*"}, nil), admission.Create, pods, "binding", "ns", true},
		{"*/* main", rule(create, []string{"*"}, []string{"*"}, []string{"*/*"}, nil), admission.Create, pods, "", "ns", true},
		{"pods/* subresource", rule(create, []string{""}, []string{"v1"}, []string{"pods/*"}, nil), admission.Create, pods, "eviction", "ns", true},
		{"pods/* not deployments", rule(create, []string{"*"}, []string{"v1"}, []string{"pods/*"}, nil), admission.Create, deployments, "status", "ns", false},
		{"*/status", rule(all, []string{"*"}, []string{"*"}, []string{"*/status"}, nil), admission.Update, deployments, "status", "ns", true},
		{"*/status not scale", rule(all, []string{"*"}, []string{"*"}, []string{"*/status"}, nil), admission.Update, deployments, "scale", "ns", false},
		{"pods/status not main", rule(all, []string{""}, []string{"v1"}, []string{"pods/status"}, nil), admission.Update, pods, "", "ns", false},
		{"namespaced scope", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, scope(admissionregistrationv1.NamespacedScope)), admission.Create, pods, "", "ns", true},
		{"namespaced scope, cluster object", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, scope(admissionregistrationv1.NamespacedScope)), admission.Create, nodes, "", "", false},
		{"namespaced scope, namespace object", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, scope(admissionregistrationv1.NamespacedScope)), admission.Create, namespacesResource, "", "team", false},
		{"cluster scope, namespace object", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, scope(admissionregistrationv1.ClusterScope)), admission.Create, namespacesResource, "", "team", true},
		{"cluster scope, namespaced object", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, scope(admissionregistrationv1.ClusterScope)), admission.Create, pods, "", "ns", false},
		{"scope *", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, scope(admissionregistrationv1.AllScopes)), admission.Create, nodes, "", "", true},
	} {
		if got := ruleMatches(&c.rule, c.op, c.resource, c.sub, c.ns); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
