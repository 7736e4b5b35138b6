package netpol

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// State is what the core reads of the cluster.
type State struct {
	// NodeName is the node whose pods are enforced.
	NodeName string
	// Namespaces are the namespaces' labels, by name.
	Namespaces map[string]map[string]string
	// Pods are the cluster's pods, by namespace.
	Pods map[string][]*corev1.Pod
}

// direction is ingress or egress.
type direction int

const (
	ingress direction = iota
	egress
)

var directions = []direction{ingress, egress}

// compiled is what one policy allows, for one IP family, at this node.
type compiled struct {
	namespace string
	// targets are the addresses of this node's pods the policy selects.
	targets []netip.Addr
	// dirs are the policy's rules per direction; nil for a direction the
	// policy does not govern (an empty slice denies all).
	dirs [2][]rule
}

// rule is one ingress or egress rule: traffic with a peer it admits on a
// port it admits is allowed. The has* fields follow the policy's spec
// alone (so that a rule's nftables shape does not change with pods); the
// contents follow the pods.
type rule struct {
	// anyPeer: the rule names no peers and admits every one.
	anyPeer bool
	// hasPods: some peer selects pods; pods are their addresses.
	hasPods bool
	pods    []netip.Addr
	// hasBlocks: some peer is an ipBlock; ranges are the blocks' addresses
	// (of the family) without their exceptions, merged.
	hasBlocks bool
	ranges    []addrRange
	// anyPort: the rule names no ports.
	anyPort bool
	// ports are the numbered ports (and protocols without a port).
	ports []portRange
	// hasNamed: some port is named; named are the (address, protocol,
	// port) it resolves to on the pods it is a port of — the selected
	// pods for ingress, the peers for egress (so an egress tuple is a
	// peer and port at once).
	hasNamed bool
	named    []tuple
}

// portRange is a protocol and a range of its ports; first 0 is every port.
type portRange struct {
	proto       string // tcp, udp or sctp
	first, last uint16
}

// tuple is one address, protocol and port.
type tuple struct {
	addr  netip.Addr
	proto string
	port  uint16
}

// addrRange is the addresses from lo to hi, both included.
type addrRange struct{ lo, hi netip.Addr }

// governs reports which directions np governs: its policyTypes, or (when
// it has none, as before the API server's defaulting) ingress, and egress
// if it has egress rules.
func governs(np *networkingv1.NetworkPolicy) (in, eg bool) {
	if len(np.Spec.PolicyTypes) == 0 {
		return true, len(np.Spec.Egress) > 0
	}
	return slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress),
		slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
}

// compile resolves np against s for the family f; nil when it selects no
// pod of this node (then it needs no rules here).
func compile(np *networkingv1.NetworkPolicy, s *State, f family) *compiled {
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		return nil // the API server validates selectors
	}
	c := &compiled{namespace: np.Namespace}
	var selected []*corev1.Pod
	for _, p := range s.Pods[np.Namespace] {
		if p.Spec.NodeName != s.NodeName || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if addrs := podAddrs(p, f); len(addrs) > 0 {
			selected = append(selected, p)
			c.targets = append(c.targets, addrs...)
		}
	}
	if len(c.targets) == 0 {
		return nil
	}
	sortAddrs(&c.targets)
	in, eg := governs(np)
	if in {
		c.dirs[ingress] = []rule{}
		for _, r := range np.Spec.Ingress {
			c.dirs[ingress] = append(c.dirs[ingress], compileRule(ingress, r.From, r.Ports, np.Namespace, selected, s, f))
		}
	}
	if eg {
		c.dirs[egress] = []rule{}
		for _, r := range np.Spec.Egress {
			c.dirs[egress] = append(c.dirs[egress], compileRule(egress, r.To, r.Ports, np.Namespace, selected, s, f))
		}
	}
	return c
}

func compileRule(d direction, peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort,
	namespace string, selected []*corev1.Pod, s *State, f family) rule {
	r := rule{anyPeer: len(peers) == 0, anyPort: len(ports) == 0}
	var peerPods []*corev1.Pod
	var blocks []*networkingv1.IPBlock
	for _, peer := range peers {
		if peer.IPBlock != nil {
			r.hasBlocks = true
			blocks = append(blocks, peer.IPBlock)
			continue
		}
		r.hasPods = true
		for _, p := range peerSelects(peer, namespace, s) {
			if addrs := podAddrs(p, f); len(addrs) > 0 {
				peerPods = append(peerPods, p)
				r.pods = append(r.pods, addrs...)
			}
		}
	}
	sortAddrs(&r.pods)
	r.ranges = blockRanges(blocks, f)
	type name struct{ proto, name string }
	var names []name
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		pr := protoName(proto)
		switch {
		case p.Port == nil:
			r.ports = append(r.ports, portRange{proto: pr})
		case p.Port.Type == intstr.String:
			r.hasNamed = true
			names = append(names, name{pr, p.Port.StrVal})
		default:
			last := p.Port.IntVal
			if p.EndPort != nil && *p.EndPort > last {
				last = *p.EndPort
			}
			r.ports = append(r.ports, portRange{proto: pr, first: uint16(p.Port.IntVal), last: uint16(last)})
		}
	}
	if !r.hasNamed {
		return r
	}
	// Named ports resolve on the pods they are ports of: the selected
	// pods (ingress), or the peers (egress): the pods peers select, the
	// pods inside the ipBlocks, or every pod when the rule names no peer.
	on := selected
	if d == egress {
		on = peerPods
		if r.anyPeer || r.hasBlocks {
			for _, ns := range sortedKeys(s.Pods) {
				for _, p := range s.Pods[ns] {
					addrs := podAddrs(p, f)
					if len(addrs) > 0 && (r.anyPeer || inRanges(r.ranges, addrs[0])) {
						on = append(on, p)
					}
				}
			}
		}
	}
	seen := map[tuple]bool{}
	for _, p := range on {
		addrs := podAddrs(p, f)
		for _, n := range names {
			for _, port := range namedPorts(p, n.proto, n.name) {
				for _, a := range addrs {
					t := tuple{addr: a, proto: n.proto, port: port}
					if !seen[t] {
						seen[t] = true
						r.named = append(r.named, t)
					}
				}
			}
		}
	}
	slices.SortFunc(r.named, func(a, b tuple) int {
		if c := a.addr.Compare(b.addr); c != 0 {
			return c
		}
		if a.proto != b.proto {
			if a.proto < b.proto {
				return -1
			}
			return 1
		}
		return int(a.port) - int(b.port)
	})
	return r
}

// peerSelects are the pods a pod or namespace peer selects: those its
// podSelector matches (all when it has none) in the namespaces its
// namespaceSelector matches (the policy's own when it has none).
func peerSelects(peer networkingv1.NetworkPolicyPeer, namespace string, s *State) []*corev1.Pod {
	podSel := labels.Everything()
	if peer.PodSelector != nil {
		var err error
		if podSel, err = metav1.LabelSelectorAsSelector(peer.PodSelector); err != nil {
			return nil
		}
	}
	namespaces := []string{namespace}
	if peer.NamespaceSelector != nil {
		nsSel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
		if err != nil {
			return nil
		}
		namespaces = nil
		for _, ns := range sortedKeys(s.Namespaces) {
			if nsSel.Matches(labels.Set(s.Namespaces[ns])) {
				namespaces = append(namespaces, ns)
			}
		}
	}
	var out []*corev1.Pod
	for _, ns := range namespaces {
		for _, p := range s.Pods[ns] {
			if podSel.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
			}
		}
	}
	return out
}

// podAddrs are pod's addresses of family f: none for a pod on the host's
// network (policies neither select it nor admit it as a pod) or one that
// has finished.
func podAddrs(p *corev1.Pod, f family) []netip.Addr {
	if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil
	}
	var out []netip.Addr
	add := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil && a.Unmap().Is6() == f.Is6 && !slices.Contains(out, a.Unmap()) {
			out = append(out, a.Unmap())
		}
	}
	for _, ip := range p.Status.PodIPs {
		add(ip.IP)
	}
	if len(out) == 0 && p.Status.PodIP != "" {
		add(p.Status.PodIP)
	}
	return out
}

// namedPorts are the numbers of pod's container ports called name with
// protocol proto.
func namedPorts(p *corev1.Pod, proto, name string) []uint16 {
	var out []uint16
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			for _, cp := range c.Ports {
				pp := corev1.ProtocolTCP
				if cp.Protocol != "" {
					pp = cp.Protocol
				}
				if cp.Name == name && protoName(pp) == proto && !slices.Contains(out, uint16(cp.ContainerPort)) {
					out = append(out, uint16(cp.ContainerPort))
				}
			}
		}
	}
	return out
}

func protoName(p corev1.Protocol) string {
	switch p {
	case corev1.ProtocolUDP:
		return "udp"
	case corev1.ProtocolSCTP:
		return "sctp"
	}
	return "tcp"
}

// blockRanges are the addresses of family f the blocks hold, without
// their exceptions, merged into disjoint ranges in order.
func blockRanges(blocks []*networkingv1.IPBlock, f family) []addrRange {
	var all []addrRange
	for _, b := range blocks {
		cidr, err := netip.ParsePrefix(b.CIDR)
		if err != nil || cidr.Addr().Is6() != f.Is6 {
			continue
		}
		parts := []addrRange{prefixRange(cidr)}
		for _, ex := range b.Except {
			if e, err := netip.ParsePrefix(ex); err == nil && e.Addr().Is6() == f.Is6 {
				parts = subtract(parts, prefixRange(e))
			}
		}
		all = append(all, parts...)
	}
	return merge(all)
}

func prefixRange(p netip.Prefix) addrRange {
	p = p.Masked()
	lo := p.Addr()
	b := lo.AsSlice()
	for i := range b {
		bits := max(0, min(8, p.Bits()-8*i))
		b[i] |= byte(0xff >> bits)
	}
	hi, _ := netip.AddrFromSlice(b)
	return addrRange{lo, hi}
}

// subtract removes x from each of rs.
func subtract(rs []addrRange, x addrRange) []addrRange {
	var out []addrRange
	for _, r := range rs {
		if x.hi.Less(r.lo) || r.hi.Less(x.lo) {
			out = append(out, r)
			continue
		}
		if r.lo.Less(x.lo) {
			out = append(out, addrRange{r.lo, x.lo.Prev()})
		}
		if x.hi.Less(r.hi) {
			out = append(out, addrRange{x.hi.Next(), r.hi})
		}
	}
	return out
}

// merge sorts rs and joins those that overlap or touch.
func merge(rs []addrRange) []addrRange {
	slices.SortFunc(rs, func(a, b addrRange) int { return a.lo.Compare(b.lo) })
	var out []addrRange
	for _, r := range rs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if !last.hi.Less(r.lo) || last.hi.Next() == r.lo {
				if last.hi.Less(r.hi) {
					last.hi = r.hi
				}
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

func inRanges(rs []addrRange, a netip.Addr) bool {
	for _, r := range rs {
		if !a.Less(r.lo) && !r.hi.Less(a) {
			return true
		}
	}
	return false
}

func sortAddrs(as *[]netip.Addr) {
	slices.SortFunc(*as, netip.Addr.Compare)
	*as = slices.Compact(*as)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
