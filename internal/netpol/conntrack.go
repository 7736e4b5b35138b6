package netpol

import (
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// deleteForbidden deletes family f's conntrack entries of the connections
// j forbids (over netlink, in the calling thread's network namespace), so
// that their next packet meets the rules afresh, as new, and is dropped.
// local reports the node's own addresses. It returns how many it deleted.
func deleteForbidden(f family, j *judge, local func(netip.Addr) bool) (uint, error) {
	fam := netlink.InetFamily(unix.AF_INET)
	if f.Is6 {
		fam = unix.AF_INET6
	}
	return netlink.ConntrackDeleteFilters(netlink.ConntrackTable, fam, forbidden{j, local})
}

// forbidden matches the conntrack entries whose connection its judge
// forbids: from the original source to the address and port the reply
// comes from (the endpoint, after the service proxy's DNAT).
type forbidden struct {
	j     *judge
	local func(netip.Addr) bool
}

func (x forbidden) MatchConntrackFlow(c *netlink.ConntrackFlow) bool {
	src, ok := addrOf(c.Forward.SrcIP)
	dst, ok2 := addrOf(c.Reverse.SrcIP)
	if !ok || !ok2 {
		return false
	}
	fl := flow{src: src, dst: dst, port: c.Reverse.SrcPort, fromNode: x.local(src)}
	switch c.Forward.Protocol {
	case unix.IPPROTO_TCP:
		fl.proto = "tcp"
	case unix.IPPROTO_UDP:
		fl.proto = "udp"
	case unix.IPPROTO_SCTP:
		fl.proto = "sctp"
	default:
		fl.port = 0
	}
	return !x.j.allows(fl)
}

func addrOf(ip net.IP) (netip.Addr, bool) {
	a, ok := netip.AddrFromSlice(ip)
	return a.Unmap(), ok
}

// localAddrs are the addresses of the network namespace's interfaces.
func localAddrs() func(netip.Addr) bool {
	set := map[netip.Addr]bool{}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := addrOf(n.IP); ok {
					set[ip] = true
				}
			}
		}
	}
	return func(a netip.Addr) bool { return set[a] || a.IsLoopback() }
}
