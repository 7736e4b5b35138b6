package network

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Backend is how pod traffic crosses between nodes.
type Backend string

const (
	// HostGW routes each node's pod range through the node's address:
	// the nodes must share a link (one layer-2 network).
	HostGW Backend = "host-gw"
	// VXLAN carries pod traffic in VXLAN packets between the nodes'
	// addresses, which need only reach each other over UDP.
	VXLAN Backend = "vxlan"
)

// ParseBackend is the backend named s ("" is HostGW).
func ParseBackend(s string) (Backend, error) {
	switch b := Backend(s); b {
	case "":
		return HostGW, nil
	case HostGW, VXLAN:
		return b, nil
	}
	return "", fmt.Errorf("unknown pod network backend %q (host-gw or vxlan)", s)
}

// The VXLAN backend's device and what each node publishes of it.
const (
	// VXLANDevice is the node's VXLAN device.
	VXLANDevice = "pk.vxlan"
	// VXLANID is the VXLAN network identifier (VNI).
	VXLANID = 1
	// VXLANPort is the UDP port of the VXLAN packets (flannel's and the
	// Linux default's 8472).
	VXLANPort = 8472
	// VXLANOverhead is what VXLAN adds to a packet over IPv4: outer IP
	// (20), UDP (8), VXLAN (8) and inner Ethernet (14) headers.
	VXLANOverhead = 50
	// AnnotationVXLANMAC is the hardware address of a node's VXLAN device,
	// which its Node carries (written by the node itself).
	AnnotationVXLANMAC = "plainkube.dev/vxlan-mac"
	// AnnotationVXLANIP is the address of a node's VXLAN device: the
	// first address of its pod range.
	AnnotationVXLANIP = "plainkube.dev/vxlan-ip"
)

// Host is what the plan needs to know of this node.
type Host struct {
	// NodeName is this node's Node: it gets no route to itself.
	NodeName string
	Backend  Backend
	// Connected are the prefixes of the host's addresses: a node whose
	// address is in one is on a directly connected link (host-gw).
	Connected []netip.Prefix
	// Local are the host's own addresses: a node with one of them runs on
	// this host too (as tests run two nodes), its pods on a bridge here.
	Local []netip.Addr
}

// Route sends a pod range to Via: with Onlink through the VXLAN device
// (Via need not be on any of its subnets), else through whichever link
// reaches Via directly.
type Route struct {
	Dst    netip.Prefix
	Via    netip.Addr
	Onlink bool
}

// Neighbor is a permanent ARP entry on the VXLAN device: a remote VTEP's
// address and hardware address.
type Neighbor struct {
	IP  netip.Addr
	MAC string
}

// FDBEntry says which node address the VXLAN frames to MAC go to.
type FDBEntry struct {
	MAC string
	Dst netip.Addr
}

// Unreachable is a node the plan has no route to, and why. Pending says
// that the node has yet to publish what the route needs (a node just
// started), rather than that it cannot be reached.
type Unreachable struct {
	Node, Reason string
	Pending      bool
}

// Plan is what the node's routing should hold for the other nodes' pod
// ranges. Its lists are sorted.
type Plan struct {
	Routes    []Route
	Neighbors []Neighbor
	FDB       []FDBEntry
	// Unreachable are the nodes with a pod range that get no route.
	Unreachable []Unreachable
}

// Desired is the plan for host among nodes (this node's own Node
// included, or not): for every other node with a pod range, a route to
// it — through the node's InternalIP of the range's family (host-gw), or
// through the VXLAN device to the node's published VTEP, with the
// neighbour and forwarding entries that take frames there (vxlan). A
// node with no pod range yet is left out quietly, and so is one on this
// host (its address one of the host's: its pods' bridge is here, and a
// route through a local address would replace the bridge's); one that
// cannot be routed to (its address on no connected subnet, its VTEP not
// published yet, its range overlapping a range routed already or a
// subnet of this host) is named in Unreachable.
func Desired(host Host, nodes []*corev1.Node) Plan {
	var p Plan
	var taken []claim // ranges routed, this node's first
	for _, n := range nodes {
		if n.Name == host.NodeName {
			for _, c := range podCIDRs(n) {
				taken = append(taken, claim{c, n.Name})
			}
		}
	}
	sorted := slices.SortedFunc(slices.Values(nodes), func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, n := range sorted {
		if n.Name == host.NodeName || slices.ContainsFunc(host.Local, func(a netip.Addr) bool { return a == internalIP(n, a.Is4()) }) {
			continue
		}
		var reasons []string
		pending := true
		for _, c := range podCIDRs(n) {
			if owner := overlapping(taken, c); owner != "" {
				reasons = append(reasons, fmt.Sprintf("its pod range %s overlaps node %s's", c, owner))
				pending = false
				continue
			}
			if i := slices.IndexFunc(host.Connected, c.Overlaps); i >= 0 {
				reasons = append(reasons, fmt.Sprintf("its pod range %s overlaps this host's subnet %s", c, host.Connected[i]))
				pending = false
				continue
			}
			var reason string
			switch host.Backend {
			case VXLAN:
				reason = p.addVXLAN(n, c)
			default:
				reason = p.addHostGW(host, n, c)
			}
			if reason != "" {
				reasons = append(reasons, reason)
				pending = pending && reason == notPublished
				continue
			}
			taken = append(taken, claim{c, n.Name})
		}
		if len(reasons) > 0 {
			p.Unreachable = append(p.Unreachable, Unreachable{Node: n.Name, Reason: strings.Join(reasons, "; "), Pending: pending})
		}
	}
	slices.SortFunc(p.Routes, func(a, b Route) int { return cmp.Compare(a.Dst.String(), b.Dst.String()) })
	slices.SortFunc(p.Neighbors, func(a, b Neighbor) int { return a.IP.Compare(b.IP) })
	slices.SortFunc(p.FDB, func(a, b FDBEntry) int { return cmp.Compare(a.MAC, b.MAC) })
	return p
}

// addHostGW adds the route to n's range c through n's address, or says
// why there is none.
func (p *Plan) addHostGW(host Host, n *corev1.Node, c netip.Prefix) string {
	ip := internalIP(n, c.Addr().Is4())
	if !ip.IsValid() {
		return fmt.Sprintf("it has no InternalIP of its pod range %s's family", c)
	}
	if !slices.ContainsFunc(host.Connected, func(s netip.Prefix) bool { return s.Contains(ip) }) {
		return fmt.Sprintf("its InternalIP %s is not on a directly connected subnet (host-gw needs the nodes on one link; use --pod-network vxlan)", ip)
	}
	p.Routes = append(p.Routes, Route{Dst: c, Via: ip})
	return ""
}

// addVXLAN adds the route to n's range c through n's VTEP, its neighbour
// and forwarding entries, or says why there are none.
func (p *Plan) addVXLAN(n *corev1.Node, c netip.Prefix) string {
	if !c.Addr().Is4() {
		return fmt.Sprintf("the vxlan backend carries IPv4 pod ranges only, not %s", c)
	}
	ip := internalIP(n, true)
	if !ip.IsValid() {
		return "it has no IPv4 InternalIP"
	}
	mac, err := net.ParseMAC(n.Annotations[AnnotationVXLANMAC])
	vtep, err2 := netip.ParseAddr(n.Annotations[AnnotationVXLANIP])
	if err != nil || err2 != nil || !vtep.Is4() {
		return notPublished
	}
	p.Routes = append(p.Routes, Route{Dst: c, Via: vtep, Onlink: true})
	p.Neighbors = append(p.Neighbors, Neighbor{IP: vtep, MAC: mac.String()})
	p.FDB = append(p.FDB, FDBEntry{MAC: mac.String(), Dst: ip})
	return ""
}

const notPublished = "it has not published its VXLAN endpoint yet (annotations " + AnnotationVXLANMAC + ", " + AnnotationVXLANIP + ")"

// claim is a node's pod range the plan routes (or this node's own).
type claim struct {
	cidr netip.Prefix
	node string
}

// overlapping is the node of the first claim whose range overlaps c, or "".
func overlapping(taken []claim, c netip.Prefix) string {
	for _, t := range taken {
		if t.cidr.Overlaps(c) {
			return t.node
		}
	}
	return ""
}

// podCIDRs are n's pod ranges (spec.podCIDRs, else spec.podCIDR),
// masked; unparsable ones are left out.
func podCIDRs(n *corev1.Node) []netip.Prefix {
	list := n.Spec.PodCIDRs
	if len(list) == 0 && n.Spec.PodCIDR != "" {
		list = []string{n.Spec.PodCIDR}
	}
	var out []netip.Prefix
	for _, s := range list {
		if c, err := netip.ParsePrefix(s); err == nil && !slices.Contains(out, c.Masked()) {
			out = append(out, c.Masked())
		}
	}
	return out
}

// internalIP is n's first InternalIP of the family (IPv4 when v4).
func internalIP(n *corev1.Node, v4 bool) netip.Addr {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Unmap().Is4() == v4 {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}

// VTEPAddress is the address of a node's VXLAN device: the first address
// (the network address) of its IPv4 pod range, which the pods' bridge
// never uses (its gateway takes the one after); invalid without one.
func VTEPAddress(podRanges []netip.Prefix) netip.Addr {
	for _, c := range podRanges {
		if c.Addr().Is4() {
			return c.Masked().Addr()
		}
	}
	return netip.Addr{}
}
