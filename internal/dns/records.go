package dns

import (
	"context"
	"math"
	"net"
	"net/netip"
	"slices"
	"strings"

	mdns "github.com/miekg/dns"
)

// Answers for names under the cluster domain, as CoreDNS's kubernetes
// plugin gives them (https://github.com/kubernetes/dns/blob/master/docs/specification.md):
//
//	<service>.<ns>.svc.<zone>                 cluster IPs; a headless Service's endpoints
//	<endpoint>.<service>.<ns>.svc.<zone>      an endpoint by hostname or dashed address
//	_<port>._<proto>.<service>.<ns>.svc.<zone> SRV (and A/AAAA) for one port
//	<a-b-c-d>.<ns>.pod.<zone>                 the address in the name ("pods insecure")
//	ns.dns.<zone>, <zone> NS and SOA, dns-version.<zone> TXT
//
// A name that exists with no record of the asked type is NODATA; one
// that does not exist is NXDOMAIN; both carry the zone's SOA.

const (
	ttl = 5 // CoreDNS's kubernetes default

	// dnsSchemaVersion is the version of the specification served,
	// answered at dns-version.<zone> (TXT).
	dnsSchemaVersion = "1.1.0"
	versionTTL       = 28800

	maxCNAMEChain = 10
)

// request is a name under the cluster domain, parsed as CoreDNS parses it.
type request struct {
	port, proto string // SRV labels without their underscores
	endpoint    string
	service     string
	namespace   string
	kind        string // "svc", "pod", or "" for names that have no records (the apex, svc.<zone>, pod.<zone>)
}

// parse parses base, the query name with the zone and the final dot cut
// off ("" for the apex); ok is false for names that cannot exist.
func parse(base string) (r request, ok bool) {
	if base == "" || base == "svc" || base == "pod" {
		return r, true
	}
	segs := strings.Split(base, ".")
	last := len(segs) - 1
	r.kind = segs[last]
	if r.kind != "svc" && r.kind != "pod" {
		return r, false
	}
	if last--; last < 0 {
		return r, true
	}
	r.namespace = segs[last]
	if last--; last < 0 {
		return r, true
	}
	r.service = segs[last]
	switch last {
	case 0:
	case 1:
		r.endpoint = segs[0]
	case 2:
		r.port = strings.TrimPrefix(segs[0], "_")
		r.proto = strings.TrimPrefix(segs[1], "_")
	default: // too long to be anything
		return r, false
	}
	return r, true
}

// item is a record source, as CoreDNS's msg.Service: an address with a
// port (for SRV) under a name, or a CNAME target.
type item struct {
	addr  netip.Addr
	cname string // fully qualified, lower case
	port  int32  // -1: no SRV record
	name  string // the SRV target owning addr, fully qualified
}

// find is what the cluster holds under a name: its items, and whether the
// name exists (false: NXDOMAIN). base is as for parse.
func (s *Server) find(base string) ([]item, bool) {
	ix := s.idx
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if base == "ns.dns" {
		return s.nsItems(), true
	}
	r, ok := parse(base)
	if !ok {
		return nil, false
	}
	switch r.kind {
	case "":
		return nil, true
	case "pod":
		return s.findPod(r)
	}
	if r.service == "" {
		// <ns>.svc.<zone>: NODATA if the namespace exists.
		return nil, ix.namespaces[r.namespace] > 0
	}
	key := serviceKey(r.service, r.namespace)
	svc := ix.services[key]
	if svc == nil {
		return nil, false
	}
	svcName := key + ".svc." + s.zone
	var items []item
	switch {
	case svc.external:
		// No endpoints nor ports under an ExternalName Service, and no
		// record for an IP address as its external name.
		if r.endpoint != "" || r.port != "" || r.proto != "" || svc.externalName == "" {
			return nil, false
		}
		return []item{{cname: svc.externalName, port: -1}}, true
	case svc.headless || r.endpoint != "":
		seen := map[netip.Addr]bool{}
		for _, sl := range sortedSlices(ix.bySvc[key]) {
			for _, e := range sl.eps {
				if !serves(svc, e) || seen[e.addr] {
					continue
				}
				host := endpointHostname(e)
				if r.endpoint != "" && r.endpoint != host {
					continue
				}
				seen[e.addr] = true
				for _, p := range sl.ports {
					if matchPort(r, p) {
						items = append(items, item{addr: e.addr, port: p.num, name: host + "." + svcName})
					}
				}
			}
		}
		return items, len(items) > 0
	default:
		found := false
		for _, p := range svc.ports {
			if !matchPort(r, p) {
				continue
			}
			found = true
			for _, ip := range svc.clusterIPs {
				items = append(items, item{addr: ip, port: p.num, name: svcName})
			}
		}
		return items, found
	}
}

// sortedSlices is m's slices in the order of their keys.
func sortedSlices(m map[string]*slice) []*slice {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]*slice, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

func matchPort(r request, p port) bool {
	return (r.port == "" || r.port == p.name) && (r.proto == "" || r.proto == p.proto)
}

// findPod answers <a-b-c-d>.<ns>.pod.<zone> with the address in the name,
// without checking for such a pod ("pods insecure").
func (s *Server) findPod(r request) ([]item, bool) {
	if r.service == "" {
		return nil, s.idx.namespaces[r.namespace] > 0
	}
	var text string
	if strings.Count(r.service, "-") == 3 && !strings.Contains(r.service, "--") {
		text = strings.ReplaceAll(r.service, "-", ".")
	} else {
		text = strings.ReplaceAll(r.service, "-", ":")
	}
	ip := net.ParseIP(text)
	if ip == nil {
		return nil, false
	}
	addr, _ := netip.AddrFromSlice(ip)
	return []item{{addr: addr.Unmap(), port: 0, name: r.service + "." + r.namespace + ".pod." + s.zone}}, true
}

// nsItems are the addresses of the name server: the Services whose
// endpoints are this server's own address (the kube-dns Service, through
// the EndpointSlice Advertise keeps), or that address itself as
// ns.dns.<zone>. The caller holds the index lock.
func (s *Server) nsItems() []item {
	ix := s.idx
	var items []item
	found := false
	for _, local := range s.localIPs {
		r := ix.ptr[local]
		if r == nil {
			continue
		}
		for _, sk := range r.slices {
			sl := ix.slices[sk]
			if sl == nil {
				continue
			}
			found = true
			svc := ix.services[sl.svcKey]
			if svc == nil {
				continue
			}
			svcName := sl.svcKey + ".svc." + s.zone
			if svc.headless {
				for _, e := range sl.eps {
					items = append(items, item{addr: e.addr, port: -1, name: endpointHostname(e) + "." + svcName})
				}
				continue
			}
			for _, ip := range svc.clusterIPs {
				items = append(items, item{addr: ip, port: -1, name: svcName})
			}
		}
	}
	if !found {
		for _, local := range s.localIPs {
			items = append(items, item{addr: local, port: -1, name: "ns.dns." + s.zone})
		}
	}
	return items
}

// zoneReply is an answer from the cluster domain.
type zoneReply struct {
	rcode     int // success (records or NODATA), NXDOMAIN or REFUSED
	answer    []mdns.RR
	extra     []mdns.RR
	truncated bool
	// forwarded is set when records came from the upstreams (an
	// ExternalName's target): such an answer lives by their TTLs, not
	// the index's generation.
	forwarded bool
}

// answerZone answers q, a question under the cluster domain.
func (s *Server) answerZone(ctx context.Context, q mdns.Question) zoneReply {
	name := strings.ToLower(q.Name)
	base := s.base(name)
	exists := func(found bool) zoneReply {
		if found {
			return zoneReply{rcode: mdns.RcodeSuccess}
		}
		return zoneReply{rcode: mdns.RcodeNameError}
	}
	switch q.Qtype {
	case mdns.TypeA, mdns.TypeAAAA:
		rrs, found, up := s.addresses(ctx, q.Name, q.Qtype, nil)
		z := exists(found)
		z.answer, z.truncated, z.forwarded = rrs, up.truncated, up.asked
		return z
	case mdns.TypeSRV:
		items, found := s.find(base)
		z := exists(found)
		z.answer, z.extra = s.srv(q.Name, items)
		return z
	case mdns.TypeTXT:
		if base == "dns-version" {
			return zoneReply{answer: []mdns.RR{&mdns.TXT{Hdr: hdr(q.Name, mdns.TypeTXT, versionTTL), Txt: []string{dnsSchemaVersion}}}}
		}
		// Only names with records are NODATA here (CoreDNS's TXT).
		items, _ := s.find(base)
		return exists(len(items) > 0)
	case mdns.TypeCNAME:
		items, found := s.find(base)
		z := exists(found)
		if len(items) > 0 && items[0].cname != "" {
			z.answer = []mdns.RR{&mdns.CNAME{Hdr: hdr(q.Name, mdns.TypeCNAME, ttl), Target: items[0].cname}}
		}
		return z
	case mdns.TypeSOA:
		if base == "" {
			return zoneReply{answer: []mdns.RR{s.soa()}}
		}
		return zoneReply{} // NODATA, whether the name exists or not
	case mdns.TypeAXFR, mdns.TypeIXFR:
		return zoneReply{rcode: mdns.RcodeRefused}
	case mdns.TypeNS:
		if base == "" {
			z := zoneReply{}
			z.answer, z.extra = s.ns(q.Name)
			return z
		}
	}
	// Other types: NODATA for names that exist.
	_, found := s.find(base)
	return exists(found)
}

// base is name (lower case, under the zone) without the zone.
func (s *Server) base(name string) string {
	if name == s.zone {
		return ""
	}
	return strings.TrimSuffix(name, "."+s.zone)
}

func hdr(name string, t uint16, ttl uint32) mdns.RR_Header {
	return mdns.RR_Header{Name: name, Rrtype: t, Class: mdns.ClassINET, Ttl: ttl}
}

func addrRR(name string, a netip.Addr) mdns.RR {
	if a.Is4() {
		return &mdns.A{Hdr: hdr(name, mdns.TypeA, ttl), A: a.AsSlice()}
	}
	return &mdns.AAAA{Hdr: hdr(name, mdns.TypeAAAA, ttl), AAAA: a.AsSlice()}
}

// addresses are the A or AAAA records (qtype) of qname: its addresses of
// that family, or for an ExternalName Service a CNAME followed by its
// target's records, from the cluster or from the upstream resolvers.
// prev holds the CNAMEs followed so far.
func (s *Server) addresses(ctx context.Context, qname string, qtype uint16, prev []mdns.RR) (rrs []mdns.RR, found bool, up upstreamUse) {
	items, found := s.find(s.base(strings.ToLower(qname)))
	if !found {
		return nil, false, up
	}
	seen := map[netip.Addr]bool{}
	for _, it := range items {
		if it.cname == "" {
			if it.addr.Is4() == (qtype == mdns.TypeA) && !seen[it.addr] {
				seen[it.addr] = true
				rrs = append(rrs, addrRR(qname, it.addr))
			}
			continue
		}
		if strings.EqualFold(it.cname, qname) || len(prev) > maxCNAMEChain || duplicateCNAME(prev, qname, it.cname) {
			continue // a loop, or too long a chain
		}
		cn := &mdns.CNAME{Hdr: hdr(qname, mdns.TypeCNAME, ttl), Target: it.cname}
		if s.inZone(it.cname) {
			next, ok, nextUp := s.addresses(ctx, it.cname, qtype, append(prev, cn))
			if ok && len(next) > 0 {
				rrs = append(rrs, cn)
				rrs = append(rrs, next...)
			}
			up.asked = up.asked || nextUp.asked
			up.truncated = up.truncated || nextUp.truncated
			continue
		}
		up.asked = true
		m, err := s.fwd.lookup(ctx, it.cname, qtype)
		if err != nil {
			s.log.Debug("resolving an ExternalName target", "name", it.cname, "err", err)
			continue
		}
		up.truncated = up.truncated || m.Truncated
		rrs = append(rrs, cn)
		rrs = append(rrs, m.Answer...)
	}
	return rrs, true, up
}

// upstreamUse says whether answering a name asked the upstreams, and
// whether one of their answers came truncated.
type upstreamUse struct{ asked, truncated bool }

func duplicateCNAME(prev []mdns.RR, name, target string) bool {
	for _, rr := range prev {
		if c, ok := rr.(*mdns.CNAME); ok && strings.EqualFold(c.Hdr.Name, name) && strings.EqualFold(c.Target, target) {
			return true
		}
	}
	return false
}

// srv are the SRV records of items (owner qname) and, in extra, the
// addresses of their targets. As CoreDNS's: priority 0, the weight
// 100 shared out equally between all items, ports -1 left out, one
// record per target and port.
func (s *Server) srv(qname string, items []item) (answer, extra []mdns.RR) {
	n := 0
	for _, it := range items {
		if it.cname == "" {
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	weight := uint16(math.Floor(100 / float64(n)))
	if weight == 0 {
		weight = 1
	}
	type key struct {
		target string
		port   int32
		addr   netip.Addr
	}
	seen := map[key]bool{}
	for _, it := range items {
		if it.cname != "" || it.port == -1 {
			continue
		}
		if k := (key{target: it.name, port: it.port}); !seen[k] {
			seen[k] = true
			answer = append(answer, &mdns.SRV{Hdr: hdr(qname, mdns.TypeSRV, ttl), Weight: weight, Port: uint16(it.port), Target: it.name})
		}
		if k := (key{target: it.name, addr: it.addr, port: -2}); !seen[k] {
			seen[k] = true
			extra = append(extra, addrRR(it.name, it.addr))
		}
	}
	return answer, extra
}

// ns are the zone's NS records (owner qname) and their addresses.
func (s *Server) ns(qname string) (answer, extra []mdns.RR) {
	s.idx.mu.RLock()
	items := s.nsItems()
	s.idx.mu.RUnlock()
	seen := map[string]bool{}
	for _, it := range items {
		extra = append(extra, addrRR(it.name, it.addr))
		if !seen[it.name] {
			seen[it.name] = true
			answer = append(answer, &mdns.NS{Hdr: hdr(qname, mdns.TypeNS, ttl), Ns: it.name})
		}
	}
	return answer, extra
}

// soa is the zone's SOA record, as CoreDNS makes it: the serial is when
// the cluster's Services or EndpointSlices last changed, and the minimum
// (the TTL of negative answers) is the records' TTL.
func (s *Server) soa() mdns.RR {
	s.idx.mu.RLock()
	serial := uint32(s.idx.modified)
	s.idx.mu.RUnlock()
	return &mdns.SOA{
		Hdr:     hdr(s.zone, mdns.TypeSOA, ttl),
		Ns:      "ns.dns." + s.zone,
		Mbox:    "hostmaster." + s.zone,
		Serial:  serial,
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  ttl,
	}
}

// ptr are the names of ip: the Service with that cluster IP or else the
// endpoints with that address, as <endpoint>.<service>.<ns>.svc.<zone>.
func (s *Server) ptr(ip netip.Addr) []string {
	ix := s.idx
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	r := ix.ptr[ip]
	if r == nil {
		return nil
	}
	for _, k := range r.services {
		if svc := ix.services[k]; svc != nil {
			return []string{k + ".svc." + s.zone}
		}
	}
	var names []string
	for _, k := range r.slices {
		sl := ix.slices[k]
		if sl == nil {
			continue
		}
		svc := ix.services[sl.svcKey]
		for _, e := range sl.eps {
			if e.addr != ip || !serves(svc, e) {
				continue
			}
			n := endpointHostname(e) + "." + sl.svcKey + ".svc." + s.zone
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// reverseAddr is the address a reverse name (lower case) stands for: its
// labels read backwards, 4 decimal ones (no leading zeros, as ParseAddr
// takes them) or 32 hex nibbles.
func reverseAddr(name string) (netip.Addr, bool) {
	var text string
	if v4, ok := strings.CutSuffix(name, ".in-addr.arpa."); ok {
		labels := strings.Split(v4, ".")
		if len(labels) != 4 {
			return netip.Addr{}, false
		}
		slices.Reverse(labels)
		text = strings.Join(labels, ".")
	} else if v6, ok := strings.CutSuffix(name, ".ip6.arpa."); ok {
		nibbles := strings.Split(v6, ".")
		if len(nibbles) != 32 {
			return netip.Addr{}, false
		}
		var b strings.Builder
		for i := 31; i >= 0; i-- {
			if len(nibbles[i]) != 1 {
				return netip.Addr{}, false
			}
			b.WriteString(nibbles[i])
			if i%4 == 0 && i > 0 {
				b.WriteByte(':')
			}
		}
		text = b.String()
	} else {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(text)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}
