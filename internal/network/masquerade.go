package network

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"plainkube.dev/plainkube/internal/netfilter"
	"sigs.k8s.io/knftables"
)

// DefaultTable is the nftables table (in the ip and ip6 families) of the
// pod network's masquerading.
const DefaultTable = "plainkube-podnet"

// family is one IP family's nftables names and multicast range.
type family struct {
	netfilter.Family
	multicast netip.Prefix
}

var (
	ipv4 = family{netfilter.IPv4, netip.MustParsePrefix("224.0.0.0/4")}
	ipv6 = family{netfilter.IPv6, netip.MustParsePrefix("ff00::/8")}
)

// masqueradeChain hooks into postrouting at the source-NAT priority, as
// the service proxy's does; whichever of the two translates a connection
// first, the other is not asked (netfilter runs NAT chains of a hook
// only until one sets up the translation), and they never disagree: the
// proxy masquerades what it marked (hairpin, node ports, traffic from
// outside the node's pod range to a Service), this chain what the node's
// pods send out of the cluster.
const masqueradeChain = "pods-out"

// masqueradeRules are the family's rules of the masquerade chain: pod
// traffic (its source in one of the cluster's podRanges) is masqueraded
// unless it goes to a pod range, a Service range (a Service address is
// translated to a pod's before this hook anyway: keeping it only spares a
// lookup) or a multicast group. Only the node's own pods send from a pod
// range through its postrouting hook to elsewhere (other nodes' pods
// reach the world through their own node), so the rules match the
// cluster's ranges rather than the node's: every node's table is the
// same, and two nodes sharing a host (as tests run them) agree on it.
// nil when the cluster has no pod range of the family.
func masqueradeRules(f family, podRanges, serviceRanges []netip.Prefix) []string {
	var src []string
	for _, p := range podRanges {
		if f.Of(p) {
			src = append(src, p.Masked().String())
		}
	}
	if len(src) == 0 {
		return nil
	}
	rules := []string{fmt.Sprintf("%s saddr != %s return", f.IP, anyOf(src))}
	for _, k := range slices.Concat(podRanges, serviceRanges, []netip.Prefix{f.multicast}) {
		if f.Of(k) {
			rules = append(rules, fmt.Sprintf("%s daddr %s return", f.IP, k.Masked()))
		}
	}
	return append(rules, "masquerade fully-random")
}

// anyOf is one element, or an anonymous set of several.
func anyOf(elems []string) string {
	if len(elems) == 1 {
		return elems[0]
	}
	return "{ " + strings.Join(elems, ", ") + " }"
}

// masqueradeTables are the families' tables of the masquerading.
type masqueradeTables struct {
	name string
	nft  map[family]knftables.Interface
}

func newMasqueradeTables(name string) (*masqueradeTables, error) {
	t := &masqueradeTables{name: name, nft: map[family]knftables.Interface{}}
	for _, f := range []family{ipv4, ipv6} {
		nft, err := knftables.New(f.NFT, name)
		if err != nil {
			return nil, fmt.Errorf("nftables: %w", err)
		}
		t.nft[f] = nft
	}
	return t, nil
}

// apply rewrites each family's table (one transaction each: there is no
// moment without the rules), or removes it where the cluster has no pod
// range of the family.
func (t *masqueradeTables) apply(ctx context.Context, podRanges, serviceRanges []netip.Prefix) error {
	var errs []error
	for f, nft := range t.nft {
		tx := nft.NewTransaction()
		tx.Add(&knftables.Table{})
		rules := masqueradeRules(f, podRanges, serviceRanges)
		if rules == nil {
			tx.Delete(&knftables.Table{})
		} else {
			tx.Flush(&knftables.Table{})
			tx.Add(&knftables.Chain{Name: masqueradeChain, Type: knftables.PtrTo(knftables.NATType),
				Hook: knftables.PtrTo(knftables.PostroutingHook), Priority: knftables.PtrTo(knftables.SNATPriority)})
			for _, r := range rules {
				tx.Add(&knftables.Rule{Chain: masqueradeChain, Rule: r})
			}
		}
		if err := nft.Run(ctx, tx); err != nil {
			errs = append(errs, fmt.Errorf("%s table %s: %w", f.NFT, t.name, err))
		}
	}
	return errors.Join(errs...)
}

// remove deletes the tables.
func (t *masqueradeTables) remove(ctx context.Context) error {
	var errs []error
	for _, nft := range t.nft {
		if err := netfilter.RemoveTable(ctx, nft); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
