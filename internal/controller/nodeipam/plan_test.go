package nodeipam

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAllocate(t *testing.T) {
	cluster := netip.MustParsePrefix("10.42.0.0/16")
	p := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }
	cases := []struct {
		name string
		used []netip.Prefix
		want string
	}{
		{"empty", nil, "10.42.0.0/24"},
		{"first taken", []netip.Prefix{p("10.42.0.0/24")}, "10.42.1.0/24"},
		{"hole", []netip.Prefix{p("10.42.0.0/24"), p("10.42.2.0/24")}, "10.42.1.0/24"},
		{"overlapping bigger range", []netip.Prefix{p("10.42.0.0/23")}, "10.42.2.0/24"},
		{"unrelated ranges ignored", []netip.Prefix{p("192.168.0.0/24")}, "10.42.0.0/24"},
	}
	for _, c := range cases {
		got, err := Allocate(cluster, 24, c.used)
		if err != nil || got.String() != c.want {
			t.Errorf("%s: %v %v, want %s", c.name, got, err, c.want)
		}
	}
	if _, err := Allocate(netip.MustParsePrefix("10.0.0.0/24"), 25, []netip.Prefix{p("10.0.0.0/25"), p("10.0.0.128/25")}); err != ErrFull {
		t.Errorf("full range: %v", err)
	}
}

func TestPlan(t *testing.T) {
	node := func(name, cidr string, legacyOnly bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr}}
		if cidr != "" && !legacyOnly {
			n.Spec.PodCIDRs = []string{cidr}
		}
		return n
	}
	p := netip.MustParsePrefix
	tests := []struct {
		name     string
		node     *corev1.Node
		nodes    []*corev1.Node
		assigned []netip.Prefix
		want     string // "" : nothing to give
		err      bool
	}{
		{name: "a node with a range keeps it", node: node("a", "10.42.0.0/24", false)},
		{name: "the first free range", node: node("b", "", false),
			nodes: []*corev1.Node{node("a", "10.42.0.0/24", false), node("b", "", false)}, want: "10.42.1.0/24"},
		{name: "podCIDR alone counts as used", node: node("b", "", false),
			nodes: []*corev1.Node{node("a", "10.42.0.0/24", true)}, want: "10.42.1.0/24"},
		{name: "ranges handed out but not yet seen count as used", node: node("c", "", false),
			nodes: []*corev1.Node{node("a", "10.42.0.0/24", false)}, assigned: []netip.Prefix{p("10.42.1.0/24")}, want: "10.42.2.0/24"},
		{name: "full", node: node("c", "", false),
			assigned: []netip.Prefix{p("10.42.0.0/17"), p("10.42.128.0/17")}, err: true},
	}
	for _, tt := range tests {
		got := plan(State{Node: tt.node, Nodes: tt.nodes, Assigned: tt.assigned, ClusterCIDR: DefaultClusterCIDR, MaskBits: DefaultNodeMaskSize})
		if (got.Err != nil) != tt.err {
			t.Errorf("%s: err %v", tt.name, got.Err)
		}
		if s := got.CIDR.String(); (tt.want == "" && got.CIDR.IsValid()) || (tt.want != "" && s != tt.want) {
			t.Errorf("%s: cidr %v, want %q", tt.name, got.CIDR, tt.want)
		}
	}
}
