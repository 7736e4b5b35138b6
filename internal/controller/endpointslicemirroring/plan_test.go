package endpointslicemirroring

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

func endpoints(subsets ...corev1.EndpointSubset) *corev1.Endpoints {
	return &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext", UID: "ep-uid",
			Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{
				"note":                                "kept",
				corev1.EndpointsLastChangeTriggerTime: "2026-01-01T00:00:00Z",
				corev1.LastAppliedConfigAnnotation:    "{}",
			}},
		Subsets: subsets,
	}
}

func service(selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext", UID: "svc-uid"}, Spec: corev1.ServiceSpec{Selector: selector}}
}

func addrs(ips ...string) []corev1.EndpointAddress {
	var out []corev1.EndpointAddress
	for _, ip := range ips {
		out = append(out, corev1.EndpointAddress{IP: ip})
	}
	return out
}

var port80 = []corev1.EndpointPort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}

// mirrored is the slice plan would make for ep's first subset and
// address type at, named name (as if created earlier).
func mirrored(t *testing.T, ep *corev1.Endpoints, at discoveryv1.AddressType, name string) *discoveryv1.EndpointSlice {
	t.Helper()
	p := plan(State{Endpoints: ep, Service: service(nil)})
	for _, s := range p.Create {
		if s.AddressType == at {
			s = s.DeepCopy()
			s.Name, s.GenerateName, s.ResourceVersion, s.UID = name, "", "7", types.UID("uid-"+name)
			return s
		}
	}
	t.Fatalf("no %s slice planned for %v", at, ep.Subsets)
	return nil
}

// render is one line per endpoint-bearing slice: name, address type,
// ports and endpoints as "ip[!]" (! for not ready).
func render(ss []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range ss {
		var ports, eps []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s=%d", ptr.Deref(p.Name, ""), ptr.Deref(p.Port, 0)))
		}
		for _, e := range s.Endpoints {
			mark := ""
			if !ptr.Deref(e.Conditions.Ready, false) {
				mark = "!"
			}
			eps = append(eps, strings.Join(e.Addresses, ",")+mark)
		}
		out = append(out, fmt.Sprintf("%s %s [%s] %s", s.Name, s.AddressType, strings.Join(ports, ","), strings.Join(eps, " ")))
	}
	return out
}

func TestPlan(t *testing.T) {
	v4 := endpoints(corev1.EndpointSubset{Addresses: addrs("10.0.0.1", "10.0.0.2"), NotReadyAddresses: addrs("10.0.0.3"), Ports: port80})
	existingV4 := mirrored(t, v4, discoveryv1.AddressTypeIPv4, "ext-a")

	moved := endpoints(corev1.EndpointSubset{Addresses: addrs("10.0.0.1"), NotReadyAddresses: addrs("10.0.0.2", "10.0.0.3"), Ports: port80})
	added := endpoints(corev1.EndpointSubset{Addresses: addrs("10.0.0.1", "10.0.0.2", "10.0.0.4"), NotReadyAddresses: addrs("10.0.0.3"), Ports: port80})
	newPort := endpoints(corev1.EndpointSubset{Addresses: addrs("10.0.0.1", "10.0.0.2"), NotReadyAddresses: addrs("10.0.0.3"),
		Ports: []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}})
	relabelled := v4.DeepCopy()
	relabelled.Labels["team"] = "b"
	recreated := v4.DeepCopy()
	recreated.UID = "ep-uid-2"
	skipped := v4.DeepCopy()
	skipped.Labels[discoveryv1.LabelSkipMirror] = "true"
	lock := v4.DeepCopy()
	lock.Annotations[resourcelock.LeaderElectionRecordAnnotationKey] = "{}"
	duplicate := existingV4.DeepCopy()
	duplicate.Name = "ext-b"

	tests := []struct {
		name                   string
		st                     State
		create, update, delete []string
		events                 []string
	}{
		{
			name:   "new Endpoints: one slice, ready then not ready",
			st:     State{Endpoints: v4, Service: service(nil)},
			create: []string{" IPv4 [http=80] 10.0.0.1 10.0.0.2 10.0.0.3!"},
		},
		{
			name: "both families: one slice each, subsets with other ports apart",
			st: State{Endpoints: endpoints(
				corev1.EndpointSubset{Addresses: addrs("10.0.0.1", "fd00::1"), Ports: port80},
				corev1.EndpointSubset{Addresses: addrs("10.0.0.9"), Ports: []corev1.EndpointPort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}},
			), Service: service(nil)},
			create: []string{
				" IPv4 [http=80] 10.0.0.1",
				" IPv6 [http=80] fd00::1",
				" IPv4 [dns=53] 10.0.0.9",
			},
		},
		{
			name: "irregular IPs are written canonically",
			st:   State{Endpoints: endpoints(corev1.EndpointSubset{Addresses: addrs("010.000.000.001", "FD00:0::1"), Ports: port80}), Service: service(nil)},
			create: []string{
				" IPv4 [http=80] 10.0.0.1",
				" IPv6 [http=80] fd00::1",
			},
		},
		{
			name: "no subsets: nothing to mirror",
			st:   State{Endpoints: endpoints(), Service: service(nil)},
		},
		{
			name: "up to date: nothing to write",
			st:   State{Endpoints: v4, Service: service(nil), Existing: []*discoveryv1.EndpointSlice{existingV4}},
		},
		{
			name:   "address added: updated in place",
			st:     State{Endpoints: added, Service: service(nil), Existing: []*discoveryv1.EndpointSlice{existingV4}},
			update: []string{"ext-a IPv4 [http=80] 10.0.0.1 10.0.0.2 10.0.0.4 10.0.0.3!"},
		},
		{
			name:   "address moved to notReadyAddresses: updated in place",
			st:     State{Endpoints: moved, Service: service(nil), Existing: []*discoveryv1.EndpointSlice{existingV4}},
			update: []string{"ext-a IPv4 [http=80] 10.0.0.1 10.0.0.2! 10.0.0.3!"},
		},
		{
			name:   "ports changed: the old slice is reused",
			st:     State{Endpoints: newPort, Service: service(nil), Existing: []*discoveryv1.EndpointSlice{existingV4}},
			update: []string{"ext-a IPv4 [http=8080] 10.0.0.1 10.0.0.2 10.0.0.3!"},
		},
		{
			name:   "labels changed: updated",
			st:     State{Endpoints: relabelled, Service: service(nil), Existing: []*discoveryv1.EndpointSlice{existingV4}},
			update: []string{"ext-a IPv4 [http=80] 10.0.0.1 10.0.0.2 10.0.0.3!"},
		},
		{
			name:   "Endpoints made again under the same name: owner updated",
			st:     State{Endpoints: recreated, Service: service(nil), Existing: []*discoveryv1.EndpointSlice{existingV4}},
			update: []string{"ext-a IPv4 [http=80] 10.0.0.1 10.0.0.2 10.0.0.3!"},
		},
		{
			name:   "a second slice for the same ports is deleted",
			st:     State{Endpoints: v4, Service: service(nil), Existing: []*discoveryv1.EndpointSlice{duplicate, existingV4}},
			delete: []string{"ext-b IPv4 [http=80] 10.0.0.1 10.0.0.2 10.0.0.3!"},
		},
		{
			name:   "subsets emptied: slices deleted",
			st:     State{Endpoints: endpoints(), Service: service(nil), Existing: []*discoveryv1.EndpointSlice{existingV4}},
			delete: []string{"ext-a IPv4 [http=80] 10.0.0.1 10.0.0.2 10.0.0.3!"},
		},
		{
			name:   "Endpoints gone",
			st:     State{Service: service(nil), Existing: []*discoveryv1.EndpointSlice{existingV4}},
			delete: []string{"ext-a IPv4 [http=80] 10.0.0.1 10.0.0.2 10.0.0.3!"},
		},
		{
			name:   "Service gone",
			st:     State{Endpoints: v4, Existing: []*discoveryv1.EndpointSlice{existingV4}},
			delete: []string{"ext-a IPv4 [http=80] 10.0.0.1 10.0.0.2 10.0.0.3!"},
		},
		{
			name:   "Service with a selector",
			st:     State{Endpoints: v4, Service: service(map[string]string{"app": "x"}), Existing: []*discoveryv1.EndpointSlice{existingV4}},
			delete: []string{"ext-a IPv4 [http=80] 10.0.0.1 10.0.0.2 10.0.0.3!"},
		},
		{
			name: "Service with an empty selector is not mirrored either",
			st:   State{Endpoints: v4, Service: service(map[string]string{})},
		},
		{
			name:   "skip-mirror label",
			st:     State{Endpoints: skipped, Service: service(nil), Existing: []*discoveryv1.EndpointSlice{existingV4}},
			delete: []string{"ext-a IPv4 [http=80] 10.0.0.1 10.0.0.2 10.0.0.3!"},
		},
		{
			name: "leader-election lock",
			st:   State{Endpoints: lock, Service: service(nil)},
		},
		{
			name: "at most MaxPerSubset addresses per subset, ready first",
			st: State{Endpoints: endpoints(
				corev1.EndpointSubset{Addresses: addrs("10.0.0.1", "10.0.0.2", "10.0.0.3"), NotReadyAddresses: addrs("10.0.0.4"), Ports: port80},
				corev1.EndpointSubset{NotReadyAddresses: addrs("10.0.1.1"), Ports: []corev1.EndpointPort{{Name: "b", Port: 81, Protocol: corev1.ProtocolTCP}}},
			), Service: service(nil), MaxPerSubset: 2},
			create: []string{" IPv4 [http=80] 10.0.0.1 10.0.0.2", " IPv4 [b=81] 10.0.1.1!"},
			events: []string{"TooManyAddressesToMirror: A max of 2 addresses can be mirrored to EndpointSlices per Endpoints subset. 2 addresses were skipped"},
		},
		{
			name:   "invalid IPs are skipped and warned about",
			st:     State{Endpoints: endpoints(corev1.EndpointSubset{Addresses: addrs("10.0.0.1", "not-an-ip"), Ports: port80}), Service: service(nil)},
			create: []string{" IPv4 [http=80] 10.0.0.1"},
			events: []string{"InvalidIPAddress: Skipped 1 invalid IP addresses when mirroring to EndpointSlices"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(tc.st)
			var events []string
			for _, e := range p.Events {
				events = append(events, e.Reason+": "+e.Message)
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"create", render(p.Create), tc.create}, {"update", render(p.Update), tc.update}, {"delete", render(p.Delete), tc.delete}, {"events", events, tc.events}} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s:\n got  %q\n want %q", c.what, c.got, c.want)
				}
			}
			for _, s := range p.Update {
				if s.ResourceVersion != "7" {
					t.Errorf("update of %s without the resourceVersion read", s.Name)
				}
			}
		})
	}
}

// TestPlanMetadata checks what a mirrored slice carries besides its
// endpoints.
func TestPlanMetadata(t *testing.T) {
	ep := endpoints(corev1.EndpointSubset{
		Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1", Hostname: "h1", NodeName: ptr.To("node-a"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p1", UID: "p1-uid"}}},
		Ports: []corev1.EndpointPort{{Name: "grpc", Port: 9000, Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("grpc")}},
	})
	p := plan(State{Endpoints: ep, Service: service(nil)})
	if len(p.Create) != 1 {
		t.Fatalf("created %d slices", len(p.Create))
	}
	s := p.Create[0]
	if s.GenerateName != "ext-" || s.Namespace != "ns" {
		t.Errorf("generateName %q namespace %q", s.GenerateName, s.Namespace)
	}
	wantLabels := map[string]string{"team": "a", discoveryv1.LabelServiceName: "ext", discoveryv1.LabelManagedBy: "endpointslicemirroring-controller.k8s.io"}
	if !maps.Equal(s.Labels, wantLabels) {
		t.Errorf("labels %v", s.Labels)
	}
	if !maps.Equal(s.Annotations, map[string]string{"note": "kept"}) {
		t.Errorf("annotations %v", s.Annotations)
	}
	if len(s.OwnerReferences) != 1 {
		t.Fatalf("owners %v", s.OwnerReferences)
	}
	o := s.OwnerReferences[0]
	if o.APIVersion != "v1" || o.Kind != "Endpoints" || o.Name != "ext" || o.UID != "ep-uid" || !ptr.Deref(o.Controller, false) || !ptr.Deref(o.BlockOwnerDeletion, false) {
		t.Errorf("owner %+v", o)
	}
	if len(s.Ports) != 1 || ptr.Deref(s.Ports[0].AppProtocol, "") != "grpc" || ptr.Deref(s.Ports[0].Protocol, "") != corev1.ProtocolTCP {
		t.Errorf("ports %+v", s.Ports)
	}
	e := s.Endpoints[0]
	if ptr.Deref(e.Hostname, "") != "h1" || ptr.Deref(e.NodeName, "") != "node-a" || e.TargetRef == nil || e.TargetRef.UID != "p1-uid" ||
		!ptr.Deref(e.Conditions.Ready, false) || e.Conditions.Serving != nil || e.Conditions.Terminating != nil {
		t.Errorf("endpoint %+v", e)
	}
	// The plan must not share the Endpoints' memory: the informer cache
	// holds it.
	*e.TargetRef = corev1.ObjectReference{}
	*e.NodeName = "x"
	if ep.Subsets[0].Addresses[0].TargetRef.UID != "p1-uid" || *ep.Subsets[0].Addresses[0].NodeName != "node-a" {
		t.Error("slice shares the Endpoints' memory")
	}
}
