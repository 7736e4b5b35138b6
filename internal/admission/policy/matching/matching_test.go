package matching

import (
	"errors"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func rule(ops []admissionv1.OperationType, groups, versions, resources []string, scope admissionv1.ScopeType, names ...string) admissionv1.NamedRuleWithOperations {
	return admissionv1.NamedRuleWithOperations{
		ResourceNames: names,
		RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: ops,
			Rule:       admissionv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources, Scope: &scope},
		},
	}
}

var (
	all     = []admissionv1.OperationType{admissionv1.OperationAll}
	create  = []admissionv1.OperationType{admissionv1.Create}
	exact   = admissionv1.Exact
	equiv   = admissionv1.Equivalent
	deploys = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deployK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
)

func TestMatches(t *testing.T) {
	deployReq := func(mut func(r *Request)) *Request {
		r := &Request{Operation: admissionv1.Create, Resource: deploys, Kind: deployK, Namespace: "ns", Name: "web",
			ObjectLabels: map[string]string{"app": "web"}}
		if mut != nil {
			mut(r)
		}
		return r
	}
	appsRule := rule(all, []string{"apps"}, []string{"v1"}, []string{"deployments"}, "*")
	tests := []struct {
		name    string
		m       *admissionv1.MatchResources
		req     *Request
		nsLabel map[string]string
		eq      Equivalents
		want    bool
		wantRes schema.GroupVersionResource
		wantErr bool
	}{
		{name: "nil matches everything", m: nil, req: deployReq(nil), want: true, wantRes: deploys},
		{name: "no rules matches everything", m: &admissionv1.MatchResources{}, req: deployReq(nil), want: true, wantRes: deploys},
		{name: "exact rule", m: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{appsRule}}, req: deployReq(nil), want: true, wantRes: deploys},
		{name: "other resource", m: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
			rule(all, []string{"apps"}, []string{"v1"}, []string{"statefulsets"}, "*")}}, req: deployReq(nil)},
		{name: "operation", m: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
			rule(create, []string{"*"}, []string{"*"}, []string{"*"}, "*")}}, req: deployReq(func(r *Request) { r.Operation = admissionv1.Update })},
		{name: "subresource needs its pattern", m: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{appsRule}},
			req: deployReq(func(r *Request) { r.Subresource = "scale" })},
		{name: "resource/* matches subresources", m: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
			rule(all, []string{"apps"}, []string{"v1"}, []string{"deployments/*"}, "*")}}, req: deployReq(func(r *Request) { r.Subresource = "scale" }), want: true, wantRes: deploys},
		{name: "*/scale", m: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
			rule(all, []string{"*"}, []string{"*"}, []string{"*/scale"}, "*")}}, req: deployReq(func(r *Request) { r.Subresource = "scale" }), want: true, wantRes: deploys},
		{name: "cluster scope refuses namespaced", m: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
			rule(all, []string{"*"}, []string{"*"}, []string{"*"}, admissionv1.ClusterScope)}}, req: deployReq(nil)},
		{name: "namespaced scope refuses namespaces", m: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
			rule(all, []string{"*"}, []string{"*"}, []string{"*"}, admissionv1.NamespacedScope)}},
			req: &Request{Operation: admissionv1.Create, Resource: namespaces, Namespace: "ns", Name: "ns"}},
		{name: "resourceNames", m: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
			rule(all, []string{"apps"}, []string{"v1"}, []string{"deployments"}, "*", "other")}}, req: deployReq(nil)},
		{name: "excluded", m: &admissionv1.MatchResources{
			ResourceRules:        []admissionv1.NamedRuleWithOperations{rule(all, []string{"*"}, []string{"*"}, []string{"*"}, "*")},
			ExcludeResourceRules: []admissionv1.NamedRuleWithOperations{appsRule}}, req: deployReq(nil)},
		{name: "object selector on new labels", m: &admissionv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
			req: deployReq(nil), want: true, wantRes: deploys},
		{name: "object selector on old labels", m: &admissionv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "old"}}},
			req: deployReq(func(r *Request) { r.OldObjectLabels = map[string]string{"app": "old"} }), want: true, wantRes: deploys},
		{name: "object selector misses", m: &admissionv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
			req: deployReq(nil)},
		{name: "namespace selector", m: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			req: deployReq(nil), nsLabel: map[string]string{"env": "prod"}, want: true, wantRes: deploys},
		{name: "namespace selector misses", m: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			req: deployReq(nil), nsLabel: map[string]string{"env": "dev"}},
		{name: "namespace selector does not skip cluster-scoped", m: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			req: &Request{Operation: admissionv1.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}}, want: true,
			wantRes: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}},
		{name: "a namespace by its own labels", m: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			req: &Request{Operation: admissionv1.Create, Resource: namespaces, Namespace: "x", Name: "x", ObjectLabels: map[string]string{"env": "prod"}}, want: true, wantRes: namespaces},
		{name: "equivalent resource", m: &admissionv1.MatchResources{MatchPolicy: &equiv, ResourceRules: []admissionv1.NamedRuleWithOperations{
			rule(all, []string{"extensions"}, []string{"v1beta1"}, []string{"deployments"}, "*")}}, req: deployReq(nil),
			eq: func(schema.GroupVersionResource, string) []Equivalent {
				return []Equivalent{{Resource: schema.GroupVersionResource{Group: "extensions", Version: "v1beta1", Resource: "deployments"}}}
			}, want: true, wantRes: schema.GroupVersionResource{Group: "extensions", Version: "v1beta1", Resource: "deployments"}},
		{name: "exact ignores equivalents", m: &admissionv1.MatchResources{MatchPolicy: &exact, ResourceRules: []admissionv1.NamedRuleWithOperations{
			rule(all, []string{"extensions"}, []string{"v1beta1"}, []string{"deployments"}, "*")}}, req: deployReq(nil),
			eq: func(schema.GroupVersionResource, string) []Equivalent {
				return []Equivalent{{Resource: schema.GroupVersionResource{Group: "extensions", Version: "v1beta1", Resource: "deployments"}}}
			}},
		{name: "selector error on a matching request", m: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			req: deployReq(nil), nsLabel: nil, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nsLabels := func() (map[string]string, error) {
				if tt.nsLabel == nil {
					return nil, errors.New("no namespace")
				}
				return tt.nsLabel, nil
			}
			got, err := Matches(tt.m, tt.req, nsLabels, tt.eq)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got.Matches != tt.want || (tt.want && got.Resource != tt.wantRes) {
				t.Errorf("Matches = %+v, want %v on %v", got, tt.want, tt.wantRes)
			}
		})
	}
}

func TestIsExempt(t *testing.T) {
	if !IsExempt(schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}) {
		t.Error("policies must be exempt")
	}
	if IsExempt(deployK) {
		t.Error("deployments are not exempt")
	}
}
