package proxy

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Node is what the proxy knows of the node it programs: its name and
// zone (for topology hints), the addresses NodePorts are served on, and
// the ranges that decide masquerading and rejecting.
type Node struct {
	Name string
	Zone string
	// Addresses serve NodePorts (127.0.0.1 is added for IPv4, as
	// upstream's --nodeport-addresses default allows).
	Addresses []netip.Addr
	// PodCIDR is the node's pod range: traffic from it keeps its source
	// address; traffic from elsewhere to a Service is masqueraded.
	PodCIDR netip.Prefix
	// ServiceCIDRs are rejected on the node where no Service owns the
	// address, so that such packets never leave the machine.
	ServiceCIDRs []netip.Prefix
}

// servicePort is one port of one Service, resolved for one node and one
// IP family: which addresses it is reached at and which endpoints serve
// it. It is the input of the rule rendering (rules.go).
type servicePort struct {
	// id is namespace/name/protocol/port-name, unique per service port.
	id       string
	protocol corev1.Protocol
	port     int32
	nodePort int32

	clusterIPs []netip.Addr
	// external are externalIPs and load-balancer ingress addresses.
	external []netip.Addr

	affinitySeconds int32 // 0: no session affinity
	externalLocal   bool  // externalTrafficPolicy: Local
	internalLocal   bool  // internalTrafficPolicy: Local

	// cluster are the endpoints for traffic from inside the cluster
	// (after topology hints), local those on this node, each already
	// reduced to the ready ones, or the serving-terminating ones when
	// none is ready.
	cluster, local []endpoint
}

// endpoint is one address and port serving a service port.
type endpoint struct {
	ip   netip.Addr
	port int32
}

func (e endpoint) String() string { return netip.AddrPortFrom(e.ip, uint16(e.port)).String() }

// candidate is an endpoint with what the choice of endpoints needs.
type candidate struct {
	endpoint
	ready, serving, terminating bool
	node                        string
	forZones, forNodes          []string
	hinted                      bool
}

// servicePorts resolves svc and its EndpointSlices for node and one IP
// family (is6). It returns nothing for Services the proxy does not
// program (ExternalName, headless) and the reasons it skipped ports.
func servicePorts(svc *corev1.Service, epSlices []*discoveryv1.EndpointSlice, node *Node, is6 bool) []servicePort {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var clusterIPs []netip.Addr
	for _, s := range svc.Spec.ClusterIPs {
		if a, err := netip.ParseAddr(s); err == nil && a.Is6() == is6 {
			clusterIPs = append(clusterIPs, a)
		}
	}
	if len(svc.Spec.ClusterIPs) == 0 && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		if a, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && a.Is6() == is6 {
			clusterIPs = append(clusterIPs, a)
		}
	}
	if len(clusterIPs) == 0 {
		return nil // headless, or not of this family
	}
	var external []netip.Addr
	addExternal := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil && a.Is6() == is6 && !slices.Contains(external, a) {
			external = append(external, a)
		}
	}
	for _, s := range svc.Spec.ExternalIPs {
		addExternal(s)
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IPMode == nil || *in.IPMode == corev1.LoadBalancerIPModeVIP {
				addExternal(in.IP)
			}
		}
	}
	var affinity int32
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		affinity = corev1.DefaultClientIPServiceAffinitySeconds
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			affinity = *c.ClientIP.TimeoutSeconds
		}
	}
	externalPolicyApplies := svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer || len(external) > 0
	useHints := topologyAware(svc)
	var out []servicePort
	for _, p := range svc.Spec.Ports {
		sp := servicePort{
			id:              fmt.Sprintf("%s/%s/%s/%s", svc.Namespace, svc.Name, strings.ToLower(string(p.Protocol)), p.Name),
			protocol:        p.Protocol,
			port:            p.Port,
			clusterIPs:      clusterIPs,
			external:        external,
			affinitySeconds: affinity,
			externalLocal:   externalPolicyApplies && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal,
			internalLocal:   svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
		}
		if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			sp.nodePort = p.NodePort
		}
		if sp.protocol == "" {
			sp.protocol = corev1.ProtocolTCP
		}
		cands := candidates(epSlices, p.Name, sp.protocol, is6)
		var local []candidate
		for _, c := range cands {
			if c.node == node.Name {
				local = append(local, c)
			}
		}
		sp.cluster = usable(topologyFilter(cands, node, useHints))
		sp.local = usable(local)
		out = append(out, sp)
	}
	return out
}

// candidates are the endpoints of the slices for the port named name,
// deduplicated by address (the first slice listing one wins), sorted.
func candidates(eps []*discoveryv1.EndpointSlice, name string, proto corev1.Protocol, is6 bool) []candidate {
	want := discoveryv1.AddressTypeIPv4
	if is6 {
		want = discoveryv1.AddressTypeIPv6
	}
	var out []candidate
	seen := map[netip.Addr]bool{}
	for _, s := range eps {
		if s.AddressType != want {
			continue
		}
		var port int32
		for _, p := range s.Ports {
			pp := corev1.ProtocolTCP
			if p.Protocol != nil {
				pp = *p.Protocol
			}
			if p.Port != nil && pp == proto && (p.Name == nil && name == "" || p.Name != nil && *p.Name == name) {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ip, err := netip.ParseAddr(e.Addresses[0])
			if err != nil || seen[ip] {
				continue
			}
			seen[ip] = true
			c := candidate{endpoint: endpoint{ip: ip, port: port}}
			c.ready = e.Conditions.Ready == nil || *e.Conditions.Ready
			c.serving = c.ready
			if e.Conditions.Serving != nil {
				c.serving = *e.Conditions.Serving
			}
			c.terminating = e.Conditions.Terminating != nil && *e.Conditions.Terminating
			if e.NodeName != nil {
				c.node = *e.NodeName
			}
			if h := e.Hints; h != nil {
				c.hinted = len(h.ForZones) > 0 || len(h.ForNodes) > 0
				for _, z := range h.ForZones {
					c.forZones = append(c.forZones, z.Name)
				}
				for _, n := range h.ForNodes {
					c.forNodes = append(c.forNodes, n.Name)
				}
			}
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b candidate) int {
		return cmp.Or(a.ip.Compare(b.ip), cmp.Compare(a.port, b.port))
	})
	return out
}

// topologyAware says whether svc asks for topology-aware routing: a
// trafficDistribution, or the topology-mode (formerly topology-aware-hints)
// annotation set to Auto.
func topologyAware(svc *corev1.Service) bool {
	if svc.Spec.TrafficDistribution != nil && *svc.Spec.TrafficDistribution != "" {
		return true
	}
	for _, k := range []string{corev1.AnnotationTopologyMode, corev1.DeprecatedAnnotationTopologyAwareHints} {
		if v := svc.Annotations[k]; v != "" && !strings.EqualFold(v, "disabled") {
			return true
		}
	}
	return false
}

// topologyFilter keeps the endpoints hinted for this node, else those
// hinted for its zone, as upstream's proxy does: only when routing is
// topology-aware, every usable endpoint carries hints, and some hint
// names this node (or zone); otherwise all endpoints are used.
func topologyFilter(cands []candidate, node *Node, useHints bool) []candidate {
	if !useHints {
		return cands
	}
	for _, c := range cands {
		if (c.ready || c.serving) && !c.hinted {
			return cands
		}
	}
	pick := func(match func(candidate) bool) []candidate {
		var out []candidate
		for _, c := range cands {
			if match(c) {
				out = append(out, c)
			}
		}
		return out
	}
	if same := pick(func(c candidate) bool { return slices.Contains(c.forNodes, node.Name) }); len(usable(same)) > 0 {
		return same
	}
	if node.Zone != "" {
		if zone := pick(func(c candidate) bool { return slices.Contains(c.forZones, node.Zone) }); len(usable(zone)) > 0 {
			return zone
		}
	}
	return cands
}

// usable are the ready endpoints, or when none is ready those still
// serving while they terminate (so that a rolling update or scale-down
// never leaves a gap).
func usable(cands []candidate) []endpoint {
	var ready, terminating []endpoint
	for _, c := range cands {
		switch {
		case c.ready:
			ready = append(ready, c.endpoint)
		case c.serving && c.terminating:
			terminating = append(terminating, c.endpoint)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return terminating
}
