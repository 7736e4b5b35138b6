package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"plainkube.dev/plainkube/internal/netfilter"
	"sigs.k8s.io/knftables"
)

// The table's fixed objects. Every Service adds elements to the maps and
// chains of its own; a packet's cost is one map lookup, whatever the
// number of Services.
const (
	// serviceIPsMap sends (destination, protocol, port) of a ClusterIP,
	// external IP or load-balancer address to its Service's chain.
	serviceIPsMap = "service-ips"
	// nodePortsMap sends (protocol, port) arriving at a node address to
	// its Service's external chain.
	nodePortsMap = "service-nodeports"
	// nodePortIPsSet are the addresses NodePorts are served on.
	nodePortIPsSet = "nodeport-ips"
	// noEndpointsMap and noEndpointNodePortsMap reject (or drop) what a
	// Service without endpoints would have been sent to.
	noEndpointsMap         = "no-endpoint-services"
	noEndpointNodePortsMap = "no-endpoint-nodeports"
	// clusterIPsSet are the allocated ClusterIPs: other ports of them are
	// rejected; serviceCIDRsSet are the ranges, whose unallocated
	// addresses are rejected too.
	clusterIPsSet   = "cluster-ips"
	serviceCIDRsSet = "service-cidrs"
	// endpointSlotsPrefix names the maps (one per protocol: an nft map's
	// port type belongs to one) that hold every Service's endpoints, each
	// pool of them at a range of slots of its own: a Service's DNAT rule
	// picks a random slot of its range. Named maps instead of a map in
	// each rule keep nft's transactions fast: nft reads every anonymous
	// set of the table before each transaction (with 10,000 Services, a
	// one-chain change took 140–210 ms that way, 50–60 ms this way).
	endpointSlotsPrefix = "endpoint-slots-"
	// hairpinSet holds (address . address) for every endpoint: a pod
	// sent to itself through a Service is masqueraded, so that its reply
	// comes back through the node.
	hairpinSet = "hairpin-pairs"

	servicesChain   = "services"
	checksChain     = "service-checks"
	nodePortChecks  = "nodeport-checks"
	markMasqChain   = "mark-for-masquerade"
	masqueradeChain = "masquerading"
	rejectChain     = "reject-chain"
	loopbackGuard   = "loopback-guard"

	// masqueradeBit marks packets to masquerade on their way out (the
	// bit upstream's kube-proxy uses).
	masqueradeBit = "0x4000"
)

// family is one IP family's table and syntax, with the package's
// rendering.
type family struct{ netfilter.Family }

var (
	ipv4 = family{netfilter.IPv4}
	ipv6 = family{netfilter.IPv6}
)

// element is one map or set element of a Service's.
type element struct {
	container string // the map or set
	key       string // the key, its parts joined by " . "
	value     string // "" for a set
}

// serviceRules is everything one Service adds to the table: chains of
// its own (name → rules), affinity sets (name → timeout) and elements of
// the shared maps and sets. Chains and sets are named after the Service,
// so two Services never share one.
type serviceRules struct {
	chains   map[string][]string
	sets     map[string]time.Duration
	elements []element
	// pools are the endpoints a chain's last rule DNATs to at random
	// (chain name → pool). The table state places each pool at slots of
	// its protocol's endpoint-slots map (slots says where, once placed)
	// and writes that rule and the slots' elements.
	pools map[string]pool
	slots map[string]slotRange
	// hairpin are the addresses of the Service's endpoints.
	hairpin []netip.Addr
	// warnings say what of the Service could not be programmed.
	warnings []string
	// healthCheck is the Service's health-check node port and its count
	// of endpoints on this node (externalTrafficPolicy Local only).
	healthCheck *healthCheck
	// udp are the endpoints each UDP destination (an address and port
	// of the Service's) may be sent to: conntrack entries to an endpoint
	// that is no longer there are deleted (see staleUDP).
	udp map[netip.AddrPort][]netip.Addr
}

// pool is endpoints to pick one of at random, each "address . port".
type pool struct {
	proto   string
	targets []string
}

// healthCheck is a Service's healthCheckNodePort and what it reports.
type healthCheck struct {
	port           int32
	namespace      string
	name           string
	localEndpoints int
}

// hostPort is a port a host process listens on.
type hostPort struct {
	protocol corev1.Protocol
	port     int32
}

// render computes the rules of svc's ports on node, for the family f.
// listening says whether a host process listens on a port: a NodePort,
// or a port of an external address of the node's own, that one holds is
// not taken over but reported in warnings.
func (f family) render(svc *corev1.Service, ports []servicePort, node *Node, listening func(hostPort) bool) serviceRules {
	r := serviceRules{chains: map[string][]string{}, sets: map[string]time.Duration{}, pools: map[string]pool{}}
	seen := map[element]bool{}
	add := func(e element) {
		if !seen[e] {
			seen[e] = true
			r.elements = append(r.elements, e)
		}
	}
	local := map[netip.Addr]bool{}
	for _, a := range node.Addresses {
		local[a] = true
	}
	isLocal := func(a netip.Addr) bool { return local[a] || a.IsLoopback() }
	for _, sp := range ports {
		for _, ip := range sp.clusterIPs {
			add(element{container: clusterIPsSet, key: ip.String()})
		}
		f.renderPort(&r, sp, node, add, isLocal, listening)
	}
	if svc.Spec.HealthCheckNodePort != 0 && len(ports) > 0 && ports[0].externalLocal {
		n := 0
		for _, sp := range ports {
			n = max(n, len(sp.local))
		}
		r.healthCheck = &healthCheck{port: svc.Spec.HealthCheckNodePort, namespace: svc.Namespace, name: svc.Name, localEndpoints: n}
	}
	return r
}

func (f family) renderPort(r *serviceRules, sp servicePort, node *Node, add func(element), isLocal func(netip.Addr) bool, listening func(hostPort) bool) {
	proto := strings.ToLower(string(sp.protocol))
	portKey := func(ip netip.Addr, port int32) string {
		return ip.String() + " . " + proto + " . " + strconv.Itoa(int(port))
	}
	tag := chainTag(sp.id)
	svcChain, extChain := "svc-"+tag, "ext-"+tag

	epChains := map[endpoint]string{}
	affinity := map[endpoint]string{}
	endpointChain := func(e endpoint) string {
		if c, ok := epChains[e]; ok {
			return c
		}
		c := "ep-" + chainTag(sp.id+"@"+e.String())
		epChains[e] = c
		var rules []string
		if sp.affinitySeconds > 0 {
			set := "aff-" + chainTag(sp.id+"@"+e.String()+"/"+strconv.Itoa(int(sp.affinitySeconds)))
			r.sets[set] = time.Duration(sp.affinitySeconds) * time.Second
			affinity[e] = set
			rules = append(rules, fmt.Sprintf("update @%s { %s saddr }", set, f.IP))
		}
		rules = append(rules, fmt.Sprintf("meta l4proto %s dnat to %s", proto, e))
		r.chains[c] = rules
		return c
	}
	// balance picks an endpoint: the rules that end chain. With session
	// affinity, each endpoint has a chain of its own that remembers its
	// clients, and a client pinned to one goes there; without, the chain
	// DNATs to a random one of a pool the table state places in the
	// endpoint-slots map of its protocol, so that a Service costs one chain, not
	// one per endpoint (nft reads every chain of the table at each
	// transaction).
	balance := func(chain string, eps []endpoint) []string {
		for _, e := range eps {
			if !slices.Contains(r.hairpin, e.ip) {
				r.hairpin = append(r.hairpin, e.ip)
			}
		}
		if sp.affinitySeconds > 0 {
			var rules []string
			chains := make([]string, len(eps))
			for i, e := range eps {
				chains[i] = endpointChain(e)
				rules = append(rules, fmt.Sprintf("%s saddr @%s goto %s", f.IP, affinity[e], chains[i]))
			}
			if len(chains) == 1 {
				return append(rules, "goto "+chains[0])
			}
			vm := make([]string, len(chains))
			for i, c := range chains {
				vm[i] = fmt.Sprintf("%d : goto %s", i, c)
			}
			return append(rules, fmt.Sprintf("numgen random mod %d vmap { %s }", len(chains), strings.Join(vm, ", ")))
		}
		targets := make([]string, len(eps))
		for i, e := range eps {
			targets[i] = fmt.Sprintf("%s . %d", e.ip, e.port)
		}
		r.pools[chain] = pool{proto: proto, targets: targets}
		return nil
	}

	internal := sp.cluster
	if sp.internalLocal {
		internal = sp.local
	}
	noEndpoints := "goto " + rejectChain
	if len(internal) > 0 {
		masq := "jump " + markMasqChain
		if node.PodCIDR.IsValid() && node.PodCIDR.Addr().Is6() == f.Is6 {
			masq = fmt.Sprintf("%s saddr != %s jump %s", f.IP, node.PodCIDR.Masked(), markMasqChain)
		}
		r.chains[svcChain] = append([]string{masq}, balance(svcChain, internal)...)
		for _, ip := range sp.clusterIPs {
			add(element{container: serviceIPsMap, key: portKey(ip, sp.port), value: "goto " + svcChain})
		}
	} else {
		verdict := noEndpoints
		if sp.internalLocal {
			verdict = "drop" // as upstream: no local endpoints for internal traffic
		}
		for _, ip := range sp.clusterIPs {
			add(element{container: noEndpointsMap, key: portKey(ip, sp.port), value: verdict})
		}
	}

	// External destinations: node ports, external IPs, load-balancer
	// addresses.
	var external []netip.Addr
	for _, ip := range sp.external {
		if isLocal(ip) && listening(hostPort{sp.protocol, sp.port}) {
			r.warnings = append(r.warnings, fmt.Sprintf("port %d/%s of %s is held by a process on the node: not served there", sp.port, sp.protocol, ip))
			continue
		}
		external = append(external, ip)
	}
	nodePort := sp.nodePort
	if nodePort != 0 && listening(hostPort{sp.protocol, nodePort}) {
		r.warnings = append(r.warnings, fmt.Sprintf("node port %d/%s is held by a process on the node: not served", nodePort, sp.protocol))
		nodePort = 0
	}
	if sp.protocol == corev1.ProtocolUDP {
		r.recordUDP(sp, external, nodePort, node)
	}
	if nodePort == 0 && len(external) == 0 {
		return
	}
	if len(sp.cluster) == 0 {
		for _, ip := range external {
			add(element{container: noEndpointsMap, key: portKey(ip, sp.port), value: noEndpoints})
		}
		if nodePort != 0 {
			add(element{container: noEndpointNodePortsMap, key: proto + " . " + strconv.Itoa(int(nodePort)), value: noEndpoints})
		}
		return
	}
	var ext []string
	if !sp.externalLocal {
		ext = append([]string{"jump " + markMasqChain}, balance(extChain, sp.cluster)...)
	} else {
		// Local: the client's address is kept, and only this node's
		// endpoints serve; pods and the node itself use the internal
		// path instead.
		if _, ok := r.chains[svcChain]; ok {
			if node.PodCIDR.IsValid() && node.PodCIDR.Addr().Is6() == f.Is6 {
				ext = append(ext, fmt.Sprintf("%s saddr %s goto %s", f.IP, node.PodCIDR.Masked(), svcChain))
			}
			ext = append(ext, "fib saddr type local goto "+svcChain)
		}
		if len(sp.local) > 0 {
			ext = append(ext, balance(extChain, sp.local)...)
		} else {
			ext = append(ext, "drop")
		}
	}
	r.chains[extChain] = ext
	for _, ip := range external {
		add(element{container: serviceIPsMap, key: portKey(ip, sp.port), value: "goto " + extChain})
	}
	if nodePort != 0 {
		add(element{container: nodePortsMap, key: proto + " . " + strconv.Itoa(int(nodePort)), value: "goto " + extChain})
	}
}

// chainTag names a chain after id: a short hash (so that names never
// collide, whatever their length or characters) and id itself, readable
// in `nft list` (characters nft does not take in a name become '_').
func chainTag(id string) string {
	sum := sha256.Sum256([]byte(id))
	h := strings.ToLower(base32.StdEncoding.EncodeToString(sum[:5]))
	name := h + "-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./", r) {
			return r
		}
		return '_' // nft's names take no ':' or '@'
	}, id)
	if len(name) > knftables.NameLengthMax-8 {
		name = name[:knftables.NameLengthMax-8]
	}
	return name
}

// skeleton are the table's fixed objects: base chains hooked into
// netfilter, the shared maps and sets, and the chains every Service's
// rules jump to. The maps' and sets' contents and the chains' rules are
// written by the caller.
func (f family) skeleton() (chains []*knftables.Chain, maps []*knftables.Map, sets []*knftables.Set) {
	base := func(name string, typ knftables.BaseChainType, hook knftables.BaseChainHook, prio knftables.BaseChainPriority) *knftables.Chain {
		return &knftables.Chain{Name: name, Type: &typ, Hook: &hook, Priority: &prio}
	}
	chains = []*knftables.Chain{
		base("nat-prerouting", knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority),
		base("nat-output", knftables.NATType, knftables.OutputHook, knftables.DNATPriority),
		base("nat-postrouting", knftables.NATType, knftables.PostroutingHook, knftables.SNATPriority),
		// Filters run after DNAT: a packet still addressed to a Service
		// here was not sent to an endpoint.
		base("filter-forward", knftables.FilterType, knftables.ForwardHook, knftables.FilterPriority),
		base("filter-output", knftables.FilterType, knftables.OutputHook, knftables.FilterPriority),
		base("filter-input", knftables.FilterType, knftables.InputHook, knftables.FilterPriority),
		{Name: servicesChain}, {Name: checksChain}, {Name: nodePortChecks}, {Name: markMasqChain},
		{Name: masqueradeChain}, {Name: rejectChain}, {Name: loopbackGuard},
	}
	l4 := "inet_proto . inet_service"
	maps = []*knftables.Map{
		{Name: serviceIPsMap, Type: f.AddrType + " . " + l4 + " : verdict"},
		{Name: nodePortsMap, Type: l4 + " : verdict"},
		{Name: noEndpointsMap, Type: f.AddrType + " . " + l4 + " : verdict"},
		{Name: noEndpointNodePortsMap, Type: l4 + " : verdict"},
	}
	for _, proto := range slotProtocols {
		maps = append(maps, &knftables.Map{Name: endpointSlotsPrefix + proto, TypeOf: "numgen random mod 2 : " + f.IP + " daddr . " + proto + " dport"})
	}
	sets = []*knftables.Set{
		{Name: nodePortIPsSet, Type: f.AddrType},
		{Name: clusterIPsSet, Type: f.AddrType},
		{Name: serviceCIDRsSet, Type: f.AddrType, Flags: []knftables.SetFlag{knftables.IntervalFlag}},
		{Name: hairpinSet, Type: f.AddrType + " . " + f.AddrType},
	}
	return chains, maps, sets
}

// skeletonRules are the rules of the fixed chains.
func (f family) skeletonRules() map[string][]string {
	ip := f.IP
	rejectWith := "reject with icmp type port-unreachable"
	if f.Is6 {
		rejectWith = "reject with icmpv6 type port-unreachable"
	}
	var guard []string // IPv6 serves no NodePorts on ::1
	if !f.Is6 {
		guard = []string{`iifname != "lo" ip daddr 127.0.0.0/8 ip saddr != 127.0.0.0/8 ct status & dnat == 0 drop`}
	}
	return map[string][]string{
		"nat-prerouting": {"jump " + servicesChain},
		"nat-output":     {"jump " + servicesChain},
		"nat-postrouting": {
			fmt.Sprintf("ct status dnat %s saddr . %s daddr @%s jump %s", ip, ip, hairpinSet, markMasqChain),
			"jump " + masqueradeChain,
		},
		"filter-forward": {"ct state new jump " + checksChain},
		"filter-output":  {"ct state new jump " + checksChain},
		"filter-input":   {"jump " + loopbackGuard, "ct state new jump " + nodePortChecks},
		servicesChain: {
			fmt.Sprintf("%s daddr . meta l4proto . th dport vmap @%s", ip, serviceIPsMap),
			fmt.Sprintf("%s daddr @%s meta l4proto . th dport vmap @%s", ip, nodePortIPsSet, nodePortsMap),
		},
		checksChain: {
			fmt.Sprintf("%s daddr . meta l4proto . th dport vmap @%s", ip, noEndpointsMap),
			fmt.Sprintf("%s daddr @%s goto %s", ip, clusterIPsSet, rejectChain),
			fmt.Sprintf("%s daddr @%s goto %s", ip, serviceCIDRsSet, rejectChain),
		},
		nodePortChecks: {
			fmt.Sprintf("%s daddr @%s meta l4proto . th dport vmap @%s", ip, nodePortIPsSet, noEndpointNodePortsMap),
		},
		markMasqChain: {"meta mark set meta mark or " + masqueradeBit},
		masqueradeChain: {
			fmt.Sprintf("meta mark & %s == 0 return", masqueradeBit),
			fmt.Sprintf("meta mark set meta mark xor %s", masqueradeBit),
			"masquerade fully-random",
		},
		rejectChain: {rejectWith},
		// NodePorts on 127.0.0.1 need route_localnet, which would let
		// other hosts reach the node's loopback services: drop what comes
		// to 127.0.0.0/8 from elsewhere unless it is a translated reply,
		// as upstream's iptables mode does.
		loopbackGuard: guard,
	}
}

// slotProtocols are the protocols a pool can be of.
var slotProtocols = []string{"tcp", "udp", "sctp"}

// dnatRule sends a packet to a random endpoint of the pool of proto
// placed at slots.
func (f family) dnatRule(proto string, slots slotRange) string {
	return fmt.Sprintf("meta l4proto %s dnat %s to numgen random mod %d offset %d map @%s%s", proto, f.IP, slots.n, slots.base, endpointSlotsPrefix, proto)
}

// nodeElements are the node's own elements: its NodePort addresses and
// the service ranges.
func (f family) nodeElements(node *Node) []element {
	var out []element
	addrs := node.Addresses
	if !f.Is6 {
		addrs = append(slices.Clone(addrs), netip.MustParseAddr("127.0.0.1"))
	}
	seen := map[netip.Addr]bool{}
	for _, a := range addrs {
		if a.Is6() == f.Is6 && !seen[a] {
			seen[a] = true
			out = append(out, element{container: nodePortIPsSet, key: a.String()})
		}
	}
	for _, p := range node.ServiceCIDRs {
		if p.Addr().Is6() == f.Is6 {
			out = append(out, element{container: serviceCIDRsSet, key: p.Masked().String()})
		}
	}
	return out
}

// recordUDP notes where sp's UDP traffic may be sent: from its ClusterIPs
// and external addresses on its port, and from the node's addresses on
// its node port, to any of its endpoints.
func (r *serviceRules) recordUDP(sp servicePort, external []netip.Addr, nodePort int32, node *Node) {
	var eps []netip.Addr
	for _, e := range append(slices.Clone(sp.cluster), sp.local...) {
		if !slices.Contains(eps, e.ip) {
			eps = append(eps, e.ip)
		}
	}
	if len(eps) == 0 {
		return
	}
	if r.udp == nil {
		r.udp = map[netip.AddrPort][]netip.Addr{}
	}
	for _, ip := range append(slices.Clone(sp.clusterIPs), external...) {
		r.udp[netip.AddrPortFrom(ip, uint16(sp.port))] = eps
	}
	if nodePort != 0 {
		for _, ip := range node.Addresses {
			r.udp[netip.AddrPortFrom(ip, uint16(nodePort))] = eps
		}
	}
}

// udpFlow is the conntrack entries of UDP traffic to a Service's address
// that was sent to one endpoint.
type udpFlow struct {
	dst      netip.AddrPort
	endpoint netip.Addr
}

// staleUDP are the UDP flows old allowed and cur no longer does: a UDP
// client that keeps sending keeps its conntrack entry, and so its old
// endpoint, forever unless the entry is deleted.
func staleUDP(old, cur serviceRules) []udpFlow {
	var out []udpFlow
	for dst, eps := range old.udp {
		for _, ep := range eps {
			if !slices.Contains(cur.udp[dst], ep) {
				out = append(out, udpFlow{dst, ep})
			}
		}
	}
	return out
}
