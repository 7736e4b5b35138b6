package netpol

import (
	"net/netip"
	"slices"
)

// flow is one connection as this node's filter chains see it: from src
// to dst (after the service proxy's DNAT) with protocol proto and
// destination port.
type flow struct {
	src, dst netip.Addr
	proto    string // tcp, udp, sctp, or "" for another protocol
	port     uint16
	// fromNode: the node itself sent it (its pods' ingress policies do
	// not apply).
	fromNode bool
}

// judge answers for flows what the table written from a tableState does:
// for each isolated local address and direction, the rules of the
// policies selecting it.
type judge struct {
	by [2]map[netip.Addr][][]rule
}

func (s *tableState) judge() *judge {
	j := &judge{by: [2]map[netip.Addr][][]rule{{}, {}}}
	for _, p := range s.applied {
		for _, d := range directions {
			if p.c.dirs[d] == nil {
				continue
			}
			for _, a := range p.c.targets {
				j.by[d][a] = append(j.by[d][a], p.c.dirs[d])
			}
		}
	}
	return j
}

// allows reports whether fl passes: its source's egress policies (if any
// select it) admit it, and so do its destination's ingress policies.
func (j *judge) allows(fl flow) bool {
	if policies, ok := j.by[egress][fl.src]; ok && !anyAdmits(policies, egress, fl) {
		return false
	}
	if policies, ok := j.by[ingress][fl.dst]; ok && !fl.fromNode && !anyAdmits(policies, ingress, fl) {
		return false
	}
	return true
}

func anyAdmits(policies [][]rule, d direction, fl flow) bool {
	for _, rules := range policies {
		for i := range rules {
			if rules[i].admits(d, fl) {
				return true
			}
		}
	}
	return false
}

// admits reports whether rule r of direction d admits fl, as its nftables
// rules do (see renderRule).
func (r *rule) admits(d direction, fl flow) bool {
	peer := fl.src
	if d == egress {
		peer = fl.dst
	}
	_, inPods := slices.BinarySearchFunc(r.pods, peer, netip.Addr.Compare)
	peerOK := r.anyPeer || inPods || inRanges(r.ranges, peer)
	portOK := r.anyPort || slices.ContainsFunc(r.ports, func(p portRange) bool {
		return p.proto == fl.proto && (p.first == 0 || p.first <= fl.port && fl.port <= p.last)
	})
	if peerOK && portOK {
		return true
	}
	if r.hasNamed && fl.proto != "" && (d == egress || peerOK) {
		return slices.Contains(r.named, tuple{addr: fl.dst, proto: fl.proto, port: fl.port})
	}
	return false
}
