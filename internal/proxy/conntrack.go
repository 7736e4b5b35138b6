package proxy

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// deleteUDPFlows deletes the conntrack entries of flows (over netlink, as
// `conntrack -D -p udp --orig-dst … --orig-port-dst … --reply-src …`),
// so that their clients' next datagrams are translated afresh.
func deleteUDPFlows(flows []udpFlow) error {
	var errs []error
	for _, f := range flows {
		filter := &netlink.ConntrackFilter{}
		family := netlink.InetFamily(unix.AF_INET)
		if f.dst.Addr().Is6() {
			family = unix.AF_INET6
		}
		err := errors.Join(
			filter.AddProtocol(unix.IPPROTO_UDP),
			filter.AddIP(netlink.ConntrackOrigDstIP, net.IP(f.dst.Addr().AsSlice())),
			filter.AddPort(netlink.ConntrackOrigDstPort, f.dst.Port()),
			filter.AddIP(netlink.ConntrackReplySrcIP, net.IP(f.endpoint.AsSlice())),
		)
		if err == nil {
			_, err = netlink.ConntrackDeleteFilters(netlink.ConntrackTable, family, filter)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("conntrack entries of %s via %s: %w", f.dst, f.endpoint, err))
		}
	}
	return errors.Join(errs...)
}
