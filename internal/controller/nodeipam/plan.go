package nodeipam

import (
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
)

// State is what one look at a node sees: the node, every node (for the
// ranges they hold), the ranges handed out that the cache may not show
// yet, and the cluster CIDR with the node mask size.
type State struct {
	Node        *corev1.Node
	Nodes       []*corev1.Node
	Assigned    []netip.Prefix
	ClusterCIDR netip.Prefix
	MaskBits    int
}

// Plan is the range to give the node (invalid: it has one already), or
// why none can be.
type Plan struct {
	CIDR netip.Prefix
	Err  error
}

// plan gives a node without a pod CIDR the first free range.
func plan(st State) Plan {
	if st.Node.Spec.PodCIDR != "" {
		return Plan{}
	}
	cidr, err := Allocate(st.ClusterCIDR, st.MaskBits, append(usedRanges(st.Nodes), st.Assigned...))
	return Plan{CIDR: cidr, Err: err}
}

// ErrFull means every node-sized range of the cluster CIDR is taken.
var ErrFull = errors.New("nodeipam: the cluster CIDR has no free range left")

// Allocate returns the first range of size maskBits inside cluster that
// overlaps none of used.
func Allocate(cluster netip.Prefix, maskBits int, used []netip.Prefix) (netip.Prefix, error) {
	cluster = cluster.Masked()
	if maskBits < cluster.Bits() || maskBits > cluster.Addr().BitLen() {
		return netip.Prefix{}, fmt.Errorf("nodeipam: node mask /%d does not fit in %s", maskBits, cluster)
	}
	if !cluster.Addr().Is4() || maskBits-cluster.Bits() > 24 {
		return netip.Prefix{}, fmt.Errorf("nodeipam: only IPv4 cluster CIDRs with at most 2^24 node ranges are supported, not %s", cluster)
	}
	n := 1 << (maskBits - cluster.Bits())
	base := cluster.Addr().As4()
	start := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	step := uint32(1) << (32 - maskBits)
	for i := 0; i < n; i++ {
		v := start + uint32(i)*step
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), maskBits)
		free := true
		for _, u := range used {
			if u.Overlaps(p) {
				free = false
				break
			}
		}
		if free {
			return p, nil
		}
	}
	return netip.Prefix{}, ErrFull
}

// usedRanges lists the pod CIDRs the nodes hold.
func usedRanges(nodes []*corev1.Node) []netip.Prefix {
	var out []netip.Prefix
	for _, n := range nodes {
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			if p, err := netip.ParsePrefix(c); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	return out
}
