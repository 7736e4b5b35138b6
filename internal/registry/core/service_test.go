package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func newService(typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.ServiceSpec{Type: typ, Selector: map[string]string{"app": "web"}, Ports: ports},
		Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}},
	}
}

func TestServiceDefaults(t *testing.T) {
	svc := newService("", corev1.ServicePort{Port: 80})
	expect(t, create(t, "services", svc), "")
	s := svc.Spec
	if s.Type != corev1.ServiceTypeClusterIP || s.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("type/sessionAffinity: %q %q", s.Type, s.SessionAffinity)
	}
	if p := s.Ports[0]; p.Protocol != corev1.ProtocolTCP || p.TargetPort != intstr.FromInt32(80) {
		t.Errorf("port: %+v", p)
	}
	if s.InternalTrafficPolicy == nil || *s.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster || s.ExternalTrafficPolicy != "" {
		t.Errorf("traffic policies: %v %q", s.InternalTrafficPolicy, s.ExternalTrafficPolicy)
	}
	if s.IPFamilyPolicy == nil || *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || len(s.IPFamilies) != 1 || s.IPFamilies[0] != corev1.IPv4Protocol {
		t.Errorf("ip families: %v %v", s.IPFamilyPolicy, s.IPFamilies)
	}
	if len(svc.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("status not cleared")
	}

	lb := newService(corev1.ServiceTypeLoadBalancer, corev1.ServicePort{Port: 443, TargetPort: intstr.FromString("https")})
	expect(t, create(t, "services", lb), "")
	if lb.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || lb.Spec.AllocateLoadBalancerNodePorts == nil || !*lb.Spec.AllocateLoadBalancerNodePorts {
		t.Errorf("LB defaults: %+v", lb.Spec)
	}

	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com."}}
	expect(t, create(t, "services", ext), "")
	if ext.Spec.IPFamilyPolicy != nil || ext.Spec.IPFamilies != nil || ext.Spec.InternalTrafficPolicy != nil {
		t.Errorf("ExternalName got IP fields: %+v", ext.Spec)
	}

	headless := newService("", corev1.ServicePort{Port: 80})
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	headless.Spec.Selector = nil
	expect(t, create(t, "services", headless), "")
	if *headless.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack || len(headless.Spec.IPFamilies) != 2 ||
		len(headless.Spec.ClusterIPs) != 1 || headless.Spec.ClusterIPs[0] != "None" {
		t.Errorf("headless selectorless: %v %v %v", *headless.Spec.IPFamilyPolicy, headless.Spec.IPFamilies, headless.Spec.ClusterIPs)
	}
}

func TestServiceValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want string
	}{
		{"ports required", newService(""), "spec.ports: Required value"},
		{"port range", newService("", corev1.ServicePort{Port: 0}),
			"spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"},
		{"names required", newService("", corev1.ServicePort{Name: "a", Port: 80}, corev1.ServicePort{Port: 81}),
			"spec.ports[1].name: Required value"},
		{"duplicate port", newService("", corev1.ServicePort{Name: "a", Port: 80}, corev1.ServicePort{Name: "b", Port: 80}),
			`spec.ports[1]: Duplicate value: {"protocol":"TCP","port":80,"targetPort":0}`},
		{"type", newService("Internal", corev1.ServicePort{Port: 80}),
			`spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`},
		{"targetPort name", newService("", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("Not_Valid")}),
			`spec.ports[0].targetPort: Invalid value: "Not_Valid": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`},
		{"nodePort on ClusterIP", newService("", corev1.ServicePort{Port: 80, NodePort: 30080}),
			"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"},
		{"nodePort range", newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Port: 80, NodePort: 80}),
			"spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"},
		{"selector", func() *corev1.Service {
			s := newService("", corev1.ServicePort{Port: 80})
			s.Spec.Selector = map[string]string{"app": "-x"}
			return s
		}(), `spec.selector: Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{"bad clusterIP", func() *corev1.Service {
			s := newService("", corev1.ServicePort{Port: 80})
			s.Spec.ClusterIP = "10.0.0.300"
			return s
		}(), `spec.clusterIPs[0]: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`},
		{"dual stack required", func() *corev1.Service {
			s := newService("", corev1.ServicePort{Port: 80})
			s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
			return s
		}(), `spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services`},
		{"headless NodePort", func() *corev1.Service {
			s := newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Port: 80})
			s.Spec.ClusterIP = corev1.ClusterIPNone
			return s
		}(), `spec.clusterIPs[0]: Invalid value: "None": may not be set to 'None' for NodePort services`},
		{"externalName required", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "d"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}}, "spec.externalName: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) { expect(t, create(t, "services", tc.svc), tc.want) })
	}
}

func TestServiceName(t *testing.T) {
	svc := newService("", corev1.ServicePort{Port: 80})
	svc.Name = "1web"
	expect(t, create(t, "services", svc),
		`metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`)
}

func TestServiceUpdate(t *testing.T) {
	old := newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Name: "http", Port: 80})
	create(t, "services", old)
	// What the allocators would have filled in.
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
	old.Spec.Ports[0].NodePort = 30080

	// Re-applying the manifest without the allocated values is no change.
	n := newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Name: "http", Port: 80})
	n.ResourceVersion = "1"
	expect(t, update(t, "services", n, old), "")
	if n.Spec.ClusterIP != "10.96.0.10" || len(n.Spec.ClusterIPs) != 1 || n.Spec.Ports[0].NodePort != 30080 {
		t.Errorf("allocated values not kept: %+v", n.Spec)
	}

	n = old.DeepCopy()
	n.Spec.ClusterIP = "10.96.0.11"
	expect(t, update(t, "services", n, old), `spec.clusterIPs[0]: Invalid value: ["10.96.0.11"]: may not change once set`)

	// Switching to ExternalName drops the IP fields and node ports.
	n = old.DeepCopy()
	n.Spec.Type = corev1.ServiceTypeExternalName
	n.Spec.ExternalName = "example.com"
	expect(t, update(t, "services", n, old), "")
	if n.Spec.ClusterIP != "" || n.Spec.IPFamilies != nil || n.Spec.IPFamilyPolicy != nil || n.Spec.Ports[0].NodePort != 0 || n.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("type change left %+v", n.Spec)
	}
}
