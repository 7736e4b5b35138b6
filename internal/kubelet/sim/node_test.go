package sim

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestAddresses(t *testing.T) {
	for _, tt := range []struct {
		i          int
		cidr, host string
	}{
		{0, "10.42.0.0/24", "172.16.0.1"},
		{1, "10.42.1.0/24", "172.16.0.2"},
		{255, "10.42.255.0/24", "172.16.1.0"},
		{256, "10.43.0.0/24", "172.16.1.1"},
		{maxNodes - 1, "10.255.255.0/24", "172.16.214.0"},
	} {
		if got := podCIDR(tt.i).String(); got != tt.cidr {
			t.Errorf("podCIDR(%d) = %s, want %s", tt.i, got, tt.cidr)
		}
		if got := nodeIP(tt.i).String(); got != tt.host {
			t.Errorf("nodeIP(%d) = %s, want %s", tt.i, got, tt.host)
		}
	}
}

func TestNodeObject(t *testing.T) {
	o, err := Options{Nodes: 5, Labels: map[string]string{"team": "a"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	n := o.node(4, t0)
	want := map[string]string{
		LabelSimulated: "true", "kubernetes.io/hostname": "sim-4", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"topology.kubernetes.io/zone": "zone-b", "node.kubernetes.io/instance-type": "sim.8cpu.32Gi", "team": "a",
	}
	for k, v := range want {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	if n.Spec.PodCIDR != "10.42.4.0/24" || n.Spec.PodCIDRs[0] != n.Spec.PodCIDR {
		t.Errorf("podCIDR %q %v", n.Spec.PodCIDR, n.Spec.PodCIDRs)
	}
	if c := n.Status.Capacity; c.Cpu().String() != "8" || c.Memory().String() != "32Gi" || c.Pods().String() != "110" {
		t.Errorf("capacity %v", c)
	}
	if ni := n.Status.NodeInfo; ni.ContainerRuntimeVersion != "sim://plainkube-0.1" || ni.KubeletVersion != "v1.37.2-plainkube.0" || ni.OperatingSystem != "linux" {
		t.Errorf("nodeInfo %+v", ni)
	}
	if a := n.Status.Addresses; len(a) != 2 || a[0].Address != "172.16.0.5" || a[1].Address != "sim-4" {
		t.Errorf("addresses %v", a)
	}
}

func TestLeaseDuration(t *testing.T) {
	if got := leaseDuration(10 * time.Second); got != 40 {
		t.Errorf("leaseDuration = %d", got)
	}
	if got := leaseDuration(100 * time.Millisecond); got != 1 {
		t.Errorf("leaseDuration(100ms) = %d", got)
	}
}

func TestIPAM(t *testing.T) {
	a := newIPAM(podCIDR(1))
	ip, ok := a.allocate("a")
	if !ok || ip.String() != "10.42.1.2" {
		t.Fatalf("first = %v %v", ip, ok)
	}
	if again, _ := a.allocate("a"); again != ip {
		t.Errorf("same pod got %v then %v", ip, again)
	}
	a.claim("b", "10.42.1.3")
	if ip, _ := a.allocate("c"); ip.String() != "10.42.1.4" {
		t.Errorf("after a claim: %v", ip)
	}
	a.claim("x", "10.9.9.9") // not ours: ignored
	for i := range 250 {
		if _, ok := a.allocate(types.UID(fmt.Sprint(i))); !ok {
			t.Fatalf("allocation %d failed", i)
		}
	}
	if _, ok := a.allocate("full"); ok {
		t.Error("allocated beyond 253 addresses")
	}
	a.release("b")
	if ip, ok := a.allocate("full"); !ok || ip.String() != "10.42.1.3" {
		t.Errorf("after release: %v %v", ip, ok)
	}
}
