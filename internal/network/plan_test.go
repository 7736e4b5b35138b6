package network

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// node is a Node named name with pod ranges cidrs and InternalIPs ips;
// with vtep, its VXLAN annotations (mac, ip).
func node(name string, cidrs []string, ips []string, vtep ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Spec.PodCIDRs = cidrs
	if len(cidrs) > 0 {
		n.Spec.PodCIDR = cidrs[0]
	}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: name})
	if len(vtep) == 2 {
		n.Annotations = map[string]string{AnnotationVXLANMAC: vtep[0], AnnotationVXLANIP: vtep[1]}
	}
	return n
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func addr(s string) netip.Addr  { return netip.MustParseAddr(s) }

func TestDesired(t *testing.T) {
	lan := []netip.Prefix{pfx("192.168.1.0/24"), pfx("fd00:1::/64")}
	self := node("a", []string{"10.42.0.0/24"}, []string{"192.168.1.10"})
	tests := []struct {
		name    string
		backend Backend
		nodes   []*corev1.Node
		want    Plan
	}{{
		name:  "host-gw: a route per other node, none to itself",
		nodes: []*corev1.Node{self, node("c", []string{"10.42.2.0/24"}, []string{"192.168.1.12"}), node("b", []string{"10.42.1.0/24"}, []string{"192.168.1.11"})},
		want: Plan{Routes: []Route{
			{Dst: pfx("10.42.1.0/24"), Via: addr("192.168.1.11")},
			{Dst: pfx("10.42.2.0/24"), Via: addr("192.168.1.12")},
		}},
	}, {
		name:  "host-gw: a node without a pod range yet is left out quietly",
		nodes: []*corev1.Node{self, node("b", nil, []string{"192.168.1.11"})},
	}, {
		name:  "host-gw: a node off the connected subnets is named, not skipped silently",
		nodes: []*corev1.Node{self, node("b", []string{"10.42.1.0/24"}, []string{"172.16.0.5"}), node("c", []string{"10.42.2.0/24"}, []string{"192.168.1.12"})},
		want: Plan{
			Routes: []Route{{Dst: pfx("10.42.2.0/24"), Via: addr("192.168.1.12")}},
			Unreachable: []Unreachable{{Node: "b",
				Reason: "its InternalIP 172.16.0.5 is not on a directly connected subnet (host-gw needs the nodes on one link; use --pod-network vxlan)"}},
		},
	}, {
		name:  "host-gw: a node without an address",
		nodes: []*corev1.Node{self, node("b", []string{"10.42.1.0/24"}, nil)},
		want:  Plan{Unreachable: []Unreachable{{Node: "b", Reason: "it has no InternalIP of its pod range 10.42.1.0/24's family"}}},
	}, {
		name: "host-gw: dual stack, each range through the address of its family",
		nodes: []*corev1.Node{self,
			node("b", []string{"10.42.1.0/24", "fd00:42:0:1::/64"}, []string{"192.168.1.11", "fd00:1::11"})},
		want: Plan{Routes: []Route{
			{Dst: pfx("10.42.1.0/24"), Via: addr("192.168.1.11")},
			{Dst: pfx("fd00:42:0:1::/64"), Via: addr("fd00:1::11")},
		}},
	}, {
		name:  "host-gw: spec.podCIDR alone, unmasked",
		nodes: []*corev1.Node{self, {ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.1.7/24"}, Status: node("b", nil, []string{"192.168.1.11"}).Status}},
		want:  Plan{Routes: []Route{{Dst: pfx("10.42.1.0/24"), Via: addr("192.168.1.11")}}},
	}, {
		name: "a range overlapping this node's or one routed already is refused",
		nodes: []*corev1.Node{self,
			node("b", []string{"10.42.0.0/23"}, []string{"192.168.1.11"}),
			node("c", []string{"10.42.5.0/24"}, []string{"192.168.1.12"}),
			node("d", []string{"10.42.5.0/24"}, []string{"192.168.1.13"})},
		want: Plan{
			Routes: []Route{{Dst: pfx("10.42.5.0/24"), Via: addr("192.168.1.12")}},
			Unreachable: []Unreachable{
				{Node: "b", Reason: "its pod range 10.42.0.0/23 overlaps node a's"},
				{Node: "d", Reason: "its pod range 10.42.5.0/24 overlaps node c's"},
			},
		},
	}, {
		name: "a node on this host gets no route (its bridge is here); a range on a subnet of this host is refused",
		nodes: []*corev1.Node{self,
			node("b", []string{"10.42.1.0/24"}, []string{"192.168.1.10"}),
			node("c", []string{"192.168.1.128/25"}, []string{"192.168.1.12"})},
		want: Plan{Unreachable: []Unreachable{{Node: "c", Reason: "its pod range 192.168.1.128/25 overlaps this host's subnet 192.168.1.0/24"}}},
	}, {
		name:    "vxlan: route onlink to the VTEP, neighbour and forwarding entries; no need of a shared subnet",
		backend: VXLAN,
		nodes: []*corev1.Node{self,
			node("b", []string{"10.42.1.0/24"}, []string{"172.16.0.5"}, "0e:00:00:00:00:0b", "10.42.1.0"),
			node("c", []string{"10.42.2.0/24"}, []string{"192.168.1.12"}, "0E:00:00:00:00:0C", "10.42.2.0")},
		want: Plan{
			Routes: []Route{
				{Dst: pfx("10.42.1.0/24"), Via: addr("10.42.1.0"), Onlink: true},
				{Dst: pfx("10.42.2.0/24"), Via: addr("10.42.2.0"), Onlink: true},
			},
			Neighbors: []Neighbor{{IP: addr("10.42.1.0"), MAC: "0e:00:00:00:00:0b"}, {IP: addr("10.42.2.0"), MAC: "0e:00:00:00:00:0c"}},
			FDB:       []FDBEntry{{MAC: "0e:00:00:00:00:0b", Dst: addr("172.16.0.5")}, {MAC: "0e:00:00:00:00:0c", Dst: addr("192.168.1.12")}},
		},
	}, {
		name:    "vxlan: a node that has not published its endpoint, and an IPv6 range",
		backend: VXLAN,
		nodes: []*corev1.Node{self,
			node("b", []string{"10.42.1.0/24"}, []string{"192.168.1.11"}),
			node("c", []string{"10.42.2.0/24", "fd00:42:0:2::/64"}, []string{"192.168.1.12"}, "0e:00:00:00:00:0c", "10.42.2.0"),
			node("d", []string{"10.42.3.0/24"}, []string{"192.168.1.13"}, "not-a-mac", "10.42.3.0")},
		want: Plan{
			Routes:    []Route{{Dst: pfx("10.42.2.0/24"), Via: addr("10.42.2.0"), Onlink: true}},
			Neighbors: []Neighbor{{IP: addr("10.42.2.0"), MAC: "0e:00:00:00:00:0c"}},
			FDB:       []FDBEntry{{MAC: "0e:00:00:00:00:0c", Dst: addr("192.168.1.12")}},
			Unreachable: []Unreachable{
				{Node: "b", Reason: "it has not published its VXLAN endpoint yet (annotations plainkube.dev/vxlan-mac, plainkube.dev/vxlan-ip)", Pending: true},
				{Node: "c", Reason: "the vxlan backend carries IPv4 pod ranges only, not fd00:42:0:2::/64"},
				{Node: "d", Reason: "it has not published its VXLAN endpoint yet (annotations plainkube.dev/vxlan-mac, plainkube.dev/vxlan-ip)", Pending: true},
			},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			backend := tt.backend
			if backend == "" {
				backend = HostGW
			}
			got := Desired(Host{NodeName: "a", Backend: backend, Connected: lan, Local: []netip.Addr{addr("192.168.1.10")}}, tt.nodes)
			if d := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
				cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestVTEPAddress(t *testing.T) {
	for _, tt := range []struct {
		ranges []netip.Prefix
		want   string
	}{
		{[]netip.Prefix{pfx("10.42.3.0/24")}, "10.42.3.0"},
		{[]netip.Prefix{pfx("fd00::/64"), pfx("10.42.3.0/24")}, "10.42.3.0"},
		{[]netip.Prefix{pfx("fd00::/64")}, "invalid IP"},
	} {
		if got := VTEPAddress(tt.ranges).String(); got != tt.want {
			t.Errorf("VTEPAddress(%v) = %s, want %s", tt.ranges, got, tt.want)
		}
	}
}

func TestMasqueradeRules(t *testing.T) {
	services := []netip.Prefix{pfx("10.96.0.0/12"), pfx("fd00:96::/108")}
	tests := []struct {
		name   string
		f      family
		ranges []netip.Prefix
		want   []string
	}{{
		name: "ipv4: pod traffic out of the cluster's ranges", f: ipv4, ranges: []netip.Prefix{pfx("10.42.0.0/16"), pfx("fd00:42::/56")},
		want: []string{
			"ip saddr != 10.42.0.0/16 return",
			"ip daddr 10.42.0.0/16 return",
			"ip daddr 10.96.0.0/12 return",
			"ip daddr 224.0.0.0/4 return",
			"masquerade fully-random",
		},
	}, {
		name: "ipv6", f: ipv6, ranges: []netip.Prefix{pfx("10.42.0.0/16"), pfx("fd00:42::/56")},
		want: []string{
			"ip6 saddr != fd00:42::/56 return",
			"ip6 daddr fd00:42::/56 return",
			"ip6 daddr fd00:96::/108 return",
			"ip6 daddr ff00::/8 return",
			"masquerade fully-random",
		},
	}, {
		name: "no range of the family: no table", f: ipv6, ranges: []netip.Prefix{pfx("10.42.0.0/16")},
	}, {
		name: "two ranges of a family, unmasked", f: ipv4, ranges: []netip.Prefix{pfx("10.42.0.0/16"), pfx("10.43.7.0/16")},
		want: []string{
			"ip saddr != { 10.42.0.0/16, 10.43.0.0/16 } return",
			"ip daddr 10.42.0.0/16 return",
			"ip daddr 10.43.0.0/16 return",
			"ip daddr 10.96.0.0/12 return",
			"ip daddr 224.0.0.0/4 return",
			"masquerade fully-random",
		},
	}}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, masqueradeRules(tt.f, tt.ranges, services)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

func TestChanges(t *testing.T) {
	r := func(dst, via string, onlink bool) Route { return Route{Dst: pfx(dst), Via: addr(via), Onlink: onlink} }
	want := []Route{r("10.42.1.0/24", "192.168.1.11", false), r("10.42.2.0/24", "192.168.1.12", false), r("10.42.4.0/24", "192.168.1.14", false)}
	have := []Route{
		r("10.42.1.0/24", "192.168.1.11", false), // kept
		r("10.42.2.0/24", "192.168.1.99", false), // replaced in place: not deleted
		r("10.42.3.0/24", "192.168.1.13", false), // its node left
	}
	write, del := changes(want, have, func(r Route) netip.Prefix { return r.Dst })
	if d := cmp.Diff([]Route{r("10.42.2.0/24", "192.168.1.12", false), r("10.42.4.0/24", "192.168.1.14", false)}, write,
		cmp.Comparer(func(a, b Route) bool { return a == b })); d != "" {
		t.Errorf("write (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Route{r("10.42.3.0/24", "192.168.1.13", false)}, del, cmp.Comparer(func(a, b Route) bool { return a == b })); d != "" {
		t.Errorf("delete (-want +got):\n%s", d)
	}
}

func TestCondition(t *testing.T) {
	ok := condition(HostGW, Plan{Routes: []Route{{}, {}}})
	if ok.Type != corev1.NodeNetworkUnavailable || ok.Status != corev1.ConditionFalse || ok.Reason != ReasonRoutesCreated ||
		ok.Message != "plainkube host-gw: routes to 2 nodes' pod ranges" {
		t.Errorf("all routed: %+v", ok)
	}
	missing := condition(HostGW, Plan{Unreachable: []Unreachable{{Node: "b", Reason: "far"}}})
	if missing.Status != corev1.ConditionFalse || missing.Reason != ReasonRoutesMissing ||
		missing.Message != "plainkube host-gw: no route to the pods of b (far)" {
		t.Errorf("one unreachable: %+v", missing)
	}
}

func TestParseBackend(t *testing.T) {
	for in, want := range map[string]Backend{"": HostGW, "host-gw": HostGW, "vxlan": VXLAN} {
		if got, err := ParseBackend(in); err != nil || got != want {
			t.Errorf("ParseBackend(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseBackend("udp"); err == nil {
		t.Error("ParseBackend(udp): no error")
	}
}
