package network

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"plainkube.dev/plainkube/internal/netfilter"
)

// RouteProtocol marks the routes the pod network adds (the originator
// field of a route, `ip route show proto 112`): it changes and removes
// only routes of this mark.
const RouteProtocol netlink.RouteProtocol = 112

// The functions here act, through netlink, on the network namespace of
// the thread that calls them.

// hostLinks is what the host's addresses say: the prefixes of its
// addresses (its directly connected subnets), and the link holding the
// node's address.
type hostLinks struct {
	connected []netip.Prefix
	local     []netip.Addr
	nodeLink  netlink.Link // nil when no link holds the node's address
}

// readHost lists the host's global addresses (the VXLAN device's left
// out) and finds the link holding nodeIP.
func readHost(nodeIP netip.Addr) (hostLinks, error) {
	var h hostLinks
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return h, fmt.Errorf("listing the host's addresses: %w", err)
	}
	vx, _ := netlink.LinkByName(VXLANDevice)
	for _, a := range addrs {
		if a.Scope != unix.RT_SCOPE_UNIVERSE || a.IPNet == nil || (vx != nil && a.LinkIndex == vx.Attrs().Index) {
			continue
		}
		p, ok := prefixOf(*a.IPNet)
		if !ok {
			continue
		}
		h.connected = append(h.connected, p.Masked())
		h.local = append(h.local, p.Addr())
		if p.Addr() == nodeIP && h.nodeLink == nil {
			if h.nodeLink, err = netlink.LinkByIndex(a.LinkIndex); err != nil {
				return h, err
			}
		}
	}
	return h, nil
}

// PodMTU is the MTU of pods' interfaces for the backend: the MTU of the
// link holding nodeIP, less VXLAN's overhead for VXLAN; 0 when no link of
// this host holds nodeIP (the CNI plugin's default then).
func PodMTU(backend Backend, nodeIP netip.Addr) (int, error) {
	h, err := readHost(nodeIP)
	if err != nil || h.nodeLink == nil {
		return 0, err
	}
	mtu := h.nodeLink.Attrs().MTU
	if backend == VXLAN {
		mtu -= VXLANOverhead
	}
	return mtu, nil
}

func prefixOf(n net.IPNet) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones), true
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func addrOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// vxlanMAC is the VXLAN device's hardware address for nodeName: locally
// administered, unicast, and the same every time the device is made, so
// that other nodes' entries for it stay right.
func vxlanMAC(nodeName string) net.HardwareAddr {
	h := sha256.Sum256([]byte(nodeName))
	return net.HardwareAddr{0x0e, h[0], h[1], h[2], h[3], h[4]}
}

// ensureVXLAN makes the VXLAN device over under (the node's link, from
// the node's address src) with the address vtep/32 and nodeName's
// hardware address, or corrects the one there; it returns the device.
func ensureVXLAN(nodeName string, under netlink.Link, src, vtep netip.Addr) (netlink.Link, error) {
	mtu := under.Attrs().MTU - VXLANOverhead
	mac := vxlanMAC(nodeName)
	want := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: VXLANDevice, MTU: mtu, HardwareAddr: mac},
		VxlanId: VXLANID, VtepDevIndex: under.Attrs().Index, SrcAddr: src.AsSlice(), Port: VXLANPort}
	link, err := netlink.LinkByName(VXLANDevice)
	if err == nil {
		vx, ok := link.(*netlink.Vxlan)
		if !ok || vx.VxlanId != want.VxlanId || vx.VtepDevIndex != want.VtepDevIndex || !vx.SrcAddr.Equal(want.SrcAddr) ||
			vx.Port != want.Port || vx.Learning {
			if err := netlink.LinkDel(link); err != nil {
				return nil, fmt.Errorf("replacing %s: %w", VXLANDevice, err)
			}
			link = nil
		}
	} else if !errors.As(err, new(netlink.LinkNotFoundError)) {
		return nil, err
	} else {
		link = nil
	}
	if link == nil {
		if err := netlink.LinkAdd(want); err != nil {
			return nil, fmt.Errorf("adding %s: %w", VXLANDevice, err)
		}
		if link, err = netlink.LinkByName(VXLANDevice); err != nil {
			return nil, err
		}
	}
	if link.Attrs().MTU != mtu {
		if err := netlink.LinkSetMTU(link, mtu); err != nil {
			return nil, err
		}
	}
	if link.Attrs().HardwareAddr.String() != mac.String() {
		if err := netlink.LinkSetHardwareAddr(link, mac); err != nil {
			return nil, err
		}
	}
	if err := setAddress(link, netip.PrefixFrom(vtep, 32)); err != nil {
		return nil, err
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return nil, err
	}
	return netlink.LinkByName(VXLANDevice)
}

// setAddress makes p the link's only IPv4 address.
func setAddress(link netlink.Link, p netip.Prefix) error {
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return err
	}
	have := false
	for _, a := range addrs {
		if q, ok := prefixOf(*a.IPNet); ok && q == p {
			have = true
			continue
		}
		if err := netlink.AddrDel(link, &a); err != nil {
			return err
		}
	}
	if have {
		return nil
	}
	return netlink.AddrAdd(link, &netlink.Addr{IPNet: ipNet(p)})
}

// removeVXLAN deletes the VXLAN device, if there is one (with it go its
// routes and entries); it reports whether there was.
func removeVXLAN() (bool, error) {
	link, err := netlink.LinkByName(VXLANDevice)
	if err != nil {
		if errors.As(err, new(netlink.LinkNotFoundError)) {
			return false, nil
		}
		return false, err
	}
	return true, netlink.LinkDel(link)
}

// applyRoutes makes the routes of RouteProtocol in the main table those
// of want: onlink ones through the device of index dev.
func applyRoutes(want []Route, dev int) error {
	listed, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return fmt.Errorf("listing routes: %w", err)
	}
	have := make([]Route, 0, len(listed))
	byRoute := map[Route]netlink.Route{}
	for _, r := range listed {
		var dst netip.Prefix
		if r.Dst != nil {
			dst, _ = prefixOf(*r.Dst)
		}
		got := Route{Dst: dst, Via: addrOf(r.Gw), Onlink: r.Flags&unix.RTNH_F_ONLINK != 0}
		if got.Onlink && r.LinkIndex != dev {
			got.Via = netip.Addr{} // through another device: never wanted
		}
		have = append(have, got)
		byRoute[got] = r
	}
	add, del := changes(want, have, func(r Route) netip.Prefix { return r.Dst })
	var errs []error
	for _, r := range add {
		nl := netlink.Route{Dst: ipNet(r.Dst), Gw: r.Via.AsSlice(), Protocol: RouteProtocol}
		if r.Onlink {
			nl.LinkIndex = dev
			nl.SetFlag(netlink.FLAG_ONLINK)
		}
		if err := netlink.RouteReplace(&nl); err != nil {
			errs = append(errs, fmt.Errorf("route to %s via %s: %w", r.Dst, r.Via, err))
		}
	}
	for _, r := range del {
		nl := byRoute[r]
		if err := netlink.RouteDel(&nl); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("deleting the route to %s: %w", r.Dst, err))
		}
	}
	return errors.Join(errs...)
}

// applyNeighbors makes the permanent ARP entries of the VXLAN device dev
// those of want.
func applyNeighbors(want []Neighbor, dev int) error {
	listed, err := netlink.NeighList(dev, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("listing %s's neighbours: %w", VXLANDevice, err)
	}
	var have []Neighbor
	for _, n := range listed {
		if n.State&netlink.NUD_PERMANENT != 0 {
			have = append(have, Neighbor{IP: addrOf(n.IP), MAC: n.HardwareAddr.String()})
		}
	}
	add, del := changes(want, have, func(n Neighbor) netip.Addr { return n.IP })
	var errs []error
	entry := func(n Neighbor) *netlink.Neigh {
		mac, _ := net.ParseMAC(n.MAC)
		return &netlink.Neigh{LinkIndex: dev, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT, Type: unix.RTN_UNICAST,
			IP: n.IP.AsSlice(), HardwareAddr: mac}
	}
	for _, n := range add {
		if err := netlink.NeighSet(entry(n)); err != nil {
			errs = append(errs, fmt.Errorf("neighbour %s: %w", n.IP, err))
		}
	}
	for _, n := range del {
		if err := netlink.NeighDel(entry(n)); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// applyFDB makes the forwarding entries of the VXLAN device dev those of
// want.
func applyFDB(want []FDBEntry, dev int) error {
	listed, err := netlink.NeighList(dev, unix.AF_BRIDGE)
	if err != nil {
		return fmt.Errorf("listing %s's forwarding entries: %w", VXLANDevice, err)
	}
	var have []FDBEntry
	for _, n := range listed {
		if n.IP != nil {
			have = append(have, FDBEntry{MAC: n.HardwareAddr.String(), Dst: addrOf(n.IP)})
		}
	}
	add, del := changes(want, have, func(e FDBEntry) string { return e.MAC })
	var errs []error
	entry := func(e FDBEntry) *netlink.Neigh {
		mac, _ := net.ParseMAC(e.MAC)
		return &netlink.Neigh{LinkIndex: dev, Family: unix.AF_BRIDGE, Flags: netlink.NTF_SELF, State: netlink.NUD_PERMANENT,
			IP: e.Dst.AsSlice(), HardwareAddr: mac}
	}
	for _, e := range add {
		if err := netlink.NeighSet(entry(e)); err != nil {
			errs = append(errs, fmt.Errorf("forwarding entry %s: %w", e.MAC, err))
		}
	}
	for _, e := range del {
		if err := netlink.NeighDel(entry(e)); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeRoutes deletes every route of RouteProtocol; it returns how many.
func removeRoutes() (int, error) {
	listed, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Protocol: RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, r := range listed {
		if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, err)
		}
	}
	return len(listed), errors.Join(errs...)
}

// enableForwarding turns on the kernel's forwarding of the families of
// podRanges: pods' packets to other nodes pass through the host.
func enableForwarding(podRanges []netip.Prefix) error {
	var switches []string
	for _, p := range podRanges {
		if p.Addr().Is6() {
			switches = append(switches, netfilter.IPv6Forwarding)
		} else {
			switches = append(switches, netfilter.IPv4Forwarding)
		}
	}
	return netfilter.TurnOn(switches...)
}

// changes are what to write (add or replace) and what to delete to make
// have want. Entries are replaced by key (a route by its destination, a
// neighbour by its address): one of have whose key is written is
// replaced in place, not deleted — deleting it after would delete its
// replacement.
func changes[T comparable, K comparable](want, have []T, key func(T) K) (write, del []T) {
	w := make(map[T]bool, len(want))
	keys := make(map[K]bool, len(want))
	for _, x := range want {
		w[x] = true
		keys[key(x)] = true
	}
	h := make(map[T]bool, len(have))
	for _, x := range have {
		h[x] = true
		if !w[x] && !keys[key(x)] {
			del = append(del, x)
		}
	}
	for _, x := range want {
		if !h[x] {
			write = append(write, x)
		}
	}
	return write, del
}
