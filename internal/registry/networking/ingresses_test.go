package networking

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func ptr[T any](v T) *T { return &v }

func testIngress() *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{
				Host: "example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: ptr(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80},
						}},
					}},
				}},
			}},
		},
	}
}

func TestIngressValidate(t *testing.T) {
	st := resource(t, "ingresses").Strategy
	path := func(i *networkingv1.Ingress) *networkingv1.HTTPIngressPath {
		return &i.Spec.Rules[0].HTTP.Paths[0]
	}
	tests := []struct {
		name   string
		mutate func(*networkingv1.Ingress)
		want   []string
	}{
		{name: "valid", mutate: func(*networkingv1.Ingress) {}},
		{name: "wildcard host", mutate: func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "*.example.com" }},
		{
			name:   "no rules and no default backend",
			mutate: func(i *networkingv1.Ingress) { i.Spec.Rules = nil },
			want:   []string{"spec: Invalid value: either `defaultBackend` or `rules` must be specified"},
		},
		{
			name:   "pathType missing",
			mutate: func(i *networkingv1.Ingress) { path(i).PathType = nil },
			want:   []string{"spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"},
		},
		{
			name:   "unknown pathType",
			mutate: func(i *networkingv1.Ingress) { path(i).PathType = ptr(networkingv1.PathType("Regex")) },
			want:   []string{`spec.rules[0].http.paths[0].pathType: Unsupported value: supported values: "Exact", "ImplementationSpecific", "Prefix"`},
		},
		{
			name:   "relative path",
			mutate: func(i *networkingv1.Ingress) { path(i).Path = "api" },
			want:   []string{"spec.rules[0].http.paths[0].path: Invalid value: must be an absolute path"},
		},
		{
			name:   "dot segments",
			mutate: func(i *networkingv1.Ingress) { path(i).Path = "/a/../b" },
			want:   []string{"spec.rules[0].http.paths[0].path: Invalid value: must not contain '/../'"},
		},
		{
			name:   "IP host",
			mutate: func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "10.0.0.1" },
			want:   []string{"spec.rules[0].host: Invalid value: must be a DNS name, not an IP address"},
		},
		{
			name:   "no port",
			mutate: func(i *networkingv1.Ingress) { path(i).Backend.Service.Port = networkingv1.ServiceBackendPort{} },
			want:   []string{"spec.rules[0].http.paths[0].backend: Required value: port name or number is required"},
		},
		{
			name: "both port name and number",
			mutate: func(i *networkingv1.Ingress) {
				path(i).Backend.Service.Port = networkingv1.ServiceBackendPort{Name: "http", Number: 80}
			},
			want: []string{"spec.rules[0].http.paths[0].backend: Invalid value: cannot set both port name & port number"},
		},
		{
			name: "resource and service backends",
			mutate: func(i *networkingv1.Ingress) {
				path(i).Backend.Resource = &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "static"}
			},
			want: []string{"spec.rules[0].http.paths[0].backend: Invalid value: cannot set both resource and service backends"},
		},
		{
			name:   "no http paths",
			mutate: func(i *networkingv1.Ingress) { i.Spec.Rules[0].HTTP.Paths = nil },
			want:   []string{"spec.rules[0].http.paths: Required value"},
		},
		{
			name: "class annotation disagrees with ingressClassName",
			mutate: func(i *networkingv1.Ingress) {
				i.Annotations = map[string]string{"kubernetes.io/ingress.class": "nginx"}
				i.Spec.IngressClassName = ptr("traefik")
			},
			want: []string{"annotations.kubernetes.io/ingress.class: Invalid value: must match `ingressClassName` when both are specified"},
		},
		{
			name: "bad TLS host",
			mutate: func(i *networkingv1.Ingress) {
				i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"Example.com"}, SecretName: "tls"}}
			},
			want: []string{"spec.tls[0].hosts[0]: Invalid value: a lowercase RFC 1123 subdomain"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ing := testIngress()
			tc.mutate(ing)
			st.PrepareForCreate(context.Background(), ing)
			expectErrors(t, st.Validate(ing), tc.want...)
		})
	}
}

func TestIngressStatus(t *testing.T) {
	st := resource(t, "ingresses").Strategy
	old := testIngress()
	ing := old.DeepCopy()
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}, {Hostname: "lb.example.com"}}
	expectErrors(t, st.ValidateStatusUpdate(ing, old))
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "192.0.2.1"}}
	expectErrors(t, st.ValidateStatusUpdate(ing, old), "status.loadBalancer.ingress[0].hostname: Invalid value: must be a DNS name, not an IP address")

	// Create clears any status sent.
	ing = testIngress()
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}}
	st.PrepareForCreate(context.Background(), ing)
	if len(ing.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("status kept on create: %+v", ing.Status)
	}
}

func TestIngressClass(t *testing.T) {
	st := resource(t, "ingressclasses").Strategy
	ic := &networkingv1.IngressClass{Spec: networkingv1.IngressClassSpec{
		Controller: "example.com/ingress-controller",
		Parameters: &networkingv1.IngressClassParametersReference{Kind: "Params", Name: "p"},
	}}
	st.Default(ic)
	if ic.Spec.Parameters.Scope == nil || *ic.Spec.Parameters.Scope != networkingv1.IngressClassParametersReferenceScopeCluster {
		t.Fatalf("scope not defaulted: %+v", ic.Spec.Parameters)
	}
	expectErrors(t, st.Validate(ic))
	changed := ic.DeepCopy()
	changed.Spec.Controller = "example.com/other"
	expectErrors(t, st.ValidateUpdate(changed, ic), "spec.controller: Invalid value: field is immutable")
}

func TestNetworkPolicyDefaults(t *testing.T) {
	st := resource(t, "networkpolicies").Strategy
	np := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{}}}},
		Egress:  []networkingv1.NetworkPolicyEgressRule{{}},
	}}
	st.Default(np)
	if got := np.Spec.PolicyTypes; len(got) != 2 || got[0] != networkingv1.PolicyTypeIngress || got[1] != networkingv1.PolicyTypeEgress {
		t.Errorf("policyTypes = %v", got)
	}
	if p := np.Spec.Ingress[0].Ports[0].Protocol; p == nil || *p != corev1.ProtocolTCP {
		t.Errorf("port protocol = %v", p)
	}
	expectErrors(t, st.Validate(np))
	np.Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"11.0.0.0/16"}}}}
	expectErrors(t, st.Validate(np), "spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: must be a strict subset of `cidr`")
}
