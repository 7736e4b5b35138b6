package netpol

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"plainkube.dev/plainkube/internal/netfilter"
	"sigs.k8s.io/knftables"
)

// family is one IP family's table and syntax, with the package's
// rendering.
type family struct{ netfilter.Family }

var (
	ipv4     = family{netfilter.IPv4}
	ipv6     = family{netfilter.IPv6}
	families = []family{ipv4, ipv6}
)

// The table's fixed objects.
const (
	// ingressChain and egressChain are the base chains on the forward
	// hook; egressInputChain is on the input hook (a pod's traffic to the
	// node itself).
	ingressChain     = "ingress"
	egressChain      = "egress"
	egressInputChain = "egress-input"
	// ingressPodsMap and egressPodsMap send a packet to (from) an
	// isolated pod of this node to its namespace's chain.
	ingressPodsMap = "ingress-pods"
	egressPodsMap  = "egress-pods"
)

// dispatchMap is direction d's verdict map.
func dispatchMap(d direction) string {
	if d == ingress {
		return ingressPodsMap
	}
	return egressPodsMap
}

// prefix is the short name of direction d in chain and set names.
func (d direction) prefix() string {
	if d == ingress {
		return "in"
	}
	return "eg"
}

// addrField is the address that puts a packet in direction d of a local
// pod (its destination for ingress), and peerField the other one.
func (f family) addrField(d direction) string {
	if d == ingress {
		return f.IP + " daddr"
	}
	return f.IP + " saddr"
}

func (f family) peerField(d direction) string {
	if d == ingress {
		return f.IP + " saddr"
	}
	return f.IP + " daddr"
}

// tag names a policy (namespace/name) or a namespace in chain and set
// names: readable, and unique through a hash.
func tag(key string) string {
	sum := sha256.Sum256([]byte(key))
	h := strings.ToLower(base32.StdEncoding.EncodeToString(sum[:5]))
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '.'
	}, key)
	if len(name) > 32 {
		name = name[:32]
	}
	return name + "-" + h
}

// Names of a policy's objects.
func selectedSet(key string) string              { return tag(key) + "-sel" }
func policyChain(d direction, key string) string { return d.prefix() + "-" + tag(key) }
func namespaceChain(d direction, ns string) string {
	return "ns-" + d.prefix() + "-" + tag(ns)
}
func ruleSet(d direction, key string, i int, kind string) string {
	return tag(key) + "-" + d.prefix() + strconv.Itoa(i) + "-" + kind
}

// setSpec is a set's type.
type setSpec struct {
	typ string
}

// objects are what one policy writes into the table: chains (name →
// rules), sets, and the sets' elements (each key's parts joined by
// " . ").
type objects struct {
	chains   map[string][]string
	sets     map[string]setSpec
	elements map[string][]string
}

// render turns policy key's compiled rules into the table's objects: the
// set of its selected pods, a chain per direction it governs with the
// sets its rules match, nothing when c is nil.
func (f family) render(key string, c *compiled) objects {
	o := objects{chains: map[string][]string{}, sets: map[string]setSpec{}, elements: map[string][]string{}}
	if c == nil {
		return o
	}
	sel := selectedSet(key)
	o.sets[sel] = setSpec{typ: f.AddrType}
	for _, a := range c.targets {
		o.elements[sel] = append(o.elements[sel], a.String())
	}
	for _, d := range directions {
		if c.dirs[d] == nil {
			continue
		}
		var rules []string
		for i, r := range c.dirs[d] {
			rules = append(rules, f.renderRule(&o, d, key, i, r)...)
		}
		o.chains[policyChain(d, key)] = rules
	}
	return o
}

// renderRule adds rule r's sets to o and returns its rules: one accept
// per peer match (the set of pod addresses, each ipBlock range) and port.
func (f family) renderRule(o *objects, d direction, key string, i int, r rule) []string {
	var peers []string
	if r.anyPeer {
		peers = []string{""}
	}
	if r.hasPods {
		name := ruleSet(d, key, i, "pods")
		o.sets[name] = setSpec{typ: f.AddrType}
		for _, a := range r.pods {
			o.elements[name] = append(o.elements[name], a.String())
		}
		peers = append(peers, fmt.Sprintf("%s @%s ", f.peerField(d), name))
	}
	// ipBlock ranges are matched in the rules themselves, one rule a
	// range: they change only with the policy, and an interval set per
	// rule would cost every transaction a dump of its elements (nft reads
	// the elements of every interval set of the table first).
	for _, ar := range r.ranges {
		peers = append(peers, fmt.Sprintf("%s %s ", f.peerField(d), rangeExpr(ar)))
	}
	var ports []string
	if r.anyPort {
		ports = []string{""}
	}
	for _, p := range r.ports {
		switch {
		case p.first == 0:
			ports = append(ports, "meta l4proto "+p.proto+" ")
		case p.first == p.last:
			ports = append(ports, fmt.Sprintf("meta l4proto %s th dport %d ", p.proto, p.first))
		default:
			ports = append(ports, fmt.Sprintf("meta l4proto %s th dport %d-%d ", p.proto, p.first, p.last))
		}
	}
	var out []string
	for _, peer := range peers {
		for _, port := range ports {
			out = append(out, peer+port+"accept")
		}
	}
	if r.hasNamed {
		name := ruleSet(d, key, i, "named")
		o.sets[name] = setSpec{typ: f.AddrType + " . inet_proto . inet_service"}
		for _, t := range r.named {
			o.elements[name] = append(o.elements[name], fmt.Sprintf("%s . %s . %d", t.addr, t.proto, t.port))
		}
		// The destination, protocol and port: the selected pod's named
		// port (ingress) from a peer, or a peer's named port (egress,
		// whose tuples are the peers').
		named := fmt.Sprintf("%s daddr . meta l4proto . th dport @%s ", f.IP, name)
		if d == egress {
			out = append(out, named+"accept")
		} else {
			for _, peer := range peers {
				out = append(out, peer+named+"accept")
			}
		}
	}
	return out
}

// rangeExpr is ar as nft writes it: an address, a prefix, or a range.
func rangeExpr(ar addrRange) string {
	if ar.lo == ar.hi {
		return ar.lo.String()
	}
	bits := ar.lo.BitLen()
	for b := 0; b <= bits; b++ {
		if p := netip.PrefixFrom(ar.lo, b); p.Masked().Addr() == ar.lo && prefixRange(p).hi == ar.hi {
			return p.String()
		}
	}
	return ar.lo.String() + "-" + ar.hi.String()
}

// skeleton are the table's fixed objects: its base chains and verdict
// maps.
func (f family) skeleton() ([]*knftables.Chain, []*knftables.Map) {
	base := func(name string, hook knftables.BaseChainHook) *knftables.Chain {
		typ, prio := knftables.FilterType, knftables.FilterPriority
		return &knftables.Chain{Name: name, Type: &typ, Hook: &hook, Priority: &prio}
	}
	chains := []*knftables.Chain{
		base(ingressChain, knftables.ForwardHook),
		base(egressChain, knftables.ForwardHook),
		base(egressInputChain, knftables.InputHook),
	}
	maps := []*knftables.Map{
		{Name: ingressPodsMap, Type: f.AddrType + " : verdict"},
		{Name: egressPodsMap, Type: f.AddrType + " : verdict"},
	}
	return chains, maps
}

// skeletonRules are the base chains' rules. Each is a base chain of its
// own, so that an accept in one (a policy allowing egress) still leaves
// the packet to the next (the destination's ingress policies).
func (f family) skeletonRules() map[string][]string {
	established := "ct state established,related accept"
	egressRules := []string{established, fmt.Sprintf("%s vmap @%s", f.addrField(egress), egressPodsMap)}
	return map[string][]string{
		ingressChain:     {established, fmt.Sprintf("%s vmap @%s", f.addrField(ingress), ingressPodsMap)},
		egressChain:      egressRules,
		egressInputChain: egressRules,
	}
}

// namespaceRules are the rules of namespace chain d: into each policy's
// chain (keys, in order) for its selected pods; then drop.
func (f family) namespaceRules(d direction, keys []string) []string {
	var out []string
	for _, key := range keys {
		out = append(out, fmt.Sprintf("%s @%s jump %s", f.addrField(d), selectedSet(key), policyChain(d, key)))
	}
	return append(out, "drop")
}

func (f family) set(name string, s setSpec) *knftables.Set {
	return &knftables.Set{Name: name, Type: s.typ}
}

// setElement is key added to or deleted from the set named set.
func setElement(set string, spec setSpec, key string, delete bool) netfilter.ElementChange {
	return netfilter.ElementChange{Delete: delete, Set: set, KeyType: spec.typ, Key: strings.Split(key, " . ")}
}

// dispatchElement sends address a to chain in direction d's map, or
// deletes a's element if chain is "".
func (f family) dispatchElement(d direction, a netip.Addr, chain string) netfilter.ElementChange {
	c := netfilter.ElementChange{Delete: chain == "", Set: dispatchMap(d), KeyType: f.AddrType, ValueType: "verdict", Key: []string{a.String()}}
	if chain != "" {
		c.Value = []string{"goto " + chain}
	}
	return c
}
