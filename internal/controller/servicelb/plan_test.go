package servicelb

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name, ip string, ready bool, labels map[string]string) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
	}}
}

func lb(name string, age time.Duration, port int32, class *string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1000, 0).Add(-age))},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class,
			Ports: []corev1.ServicePort{{Port: port, Protocol: corev1.ProtocolTCP}}},
	}
}

func TestPlan(t *testing.T) {
	nodes := []*corev1.Node{
		node("b", "192.0.2.2", true, nil),
		node("a", "192.0.2.1", true, nil),
		node("down", "192.0.2.3", false, nil),
		node("sim", "10.0.0.1", true, map[string]string{SimulatedLabel: "true"}),
	}
	other := "example.com/lb"
	services := []*corev1.Service{
		lb("old", time.Hour, 80, nil),
		lb("new", time.Minute, 80, nil),     // port 80 is held by "old"
		lb("tls", time.Minute, 443, nil),    // a port of its own
		lb("theirs", time.Hour, 81, &other), // another implementation's
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}},
	}
	got := plan(State{Services: services, Nodes: nodes})
	if len(got) != 3 {
		t.Fatalf("plan %v, want old, new and tls", got)
	}
	if in := got["default/old"]; len(in) != 2 || in[0].IP != "192.0.2.1" || in[1].IP != "192.0.2.2" {
		t.Errorf("old: %v, want both ready nodes", in)
	}
	if in := got["default/new"]; in != nil {
		t.Errorf("new: %v, want pending (port 80 is old's)", in)
	}
	if in := got["default/tls"]; len(in) != 2 {
		t.Errorf("tls: %v", in)
	}
}
