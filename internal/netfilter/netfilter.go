package netfilter

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"

	"sigs.k8s.io/knftables"
)

// Family is one IP family's table family and rule syntax.
type Family struct {
	NFT      knftables.Family
	IP       string // "ip" or "ip6", the address match keyword
	AddrType string // the set element type of an address
	Is6      bool
}

var (
	IPv4 = Family{NFT: knftables.IPv4Family, IP: "ip", AddrType: "ipv4_addr"}
	IPv6 = Family{NFT: knftables.IPv6Family, IP: "ip6", AddrType: "ipv6_addr", Is6: true}
	// Families are both, IPv4 first.
	Families = []Family{IPv4, IPv6}
)

// Of reports whether p is of the family.
func (f Family) Of(p netip.Prefix) bool { return p.Addr().Is6() == f.Is6 }

// RemoveTables deletes the tables named table in both families, as after
// a node that crashed; a missing table is no error.
func RemoveTables(ctx context.Context, table string) error {
	var errs []error
	for _, f := range Families {
		nft, err := knftables.New(f.NFT, table)
		if err != nil {
			return fmt.Errorf("nftables: %w", err)
		}
		if err := RemoveTable(ctx, nft); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemoveTable deletes nft's table; a missing one is no error.
func RemoveTable(ctx context.Context, nft knftables.Interface) error {
	tx := nft.NewTransaction()
	tx.Add(&knftables.Table{}) // so that the delete finds it
	tx.Delete(&knftables.Table{})
	return nft.Run(ctx, tx)
}

// Kernel switches the node's rules depend on (files under /proc/sys).
const (
	IPv4Forwarding = "/proc/sys/net/ipv4/ip_forward"
	IPv6Forwarding = "/proc/sys/net/ipv6/conf/all/forwarding"
	// BridgedIPv4 and BridgedIPv6 pass bridged traffic (pods on one
	// node's bridge) through the ip and ip6 hooks (br_netfilter).
	BridgedIPv4 = "/proc/sys/net/bridge/bridge-nf-call-iptables"
	BridgedIPv6 = "/proc/sys/net/bridge/bridge-nf-call-ip6tables"
	// RouteLocalnet lets DNAT send to 127.0.0.1 (node ports there).
	RouteLocalnet = "/proc/sys/net/ipv4/conf/all/route_localnet"
)

// TurnOn writes 1 into each switch that is not 1 already.
func TurnOn(switches ...string) error {
	var errs []error
	for _, f := range switches {
		if b, err := os.ReadFile(f); err == nil && len(b) > 0 && b[0] == '1' {
			continue
		}
		if err := os.WriteFile(f, []byte("1"), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
