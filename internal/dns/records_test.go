package dns

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// testServer is a Server whose index holds:
//
//	default/web     ClusterIP 10.96.0.10 and fd00::10, ports http/TCP/80 and dns/UDP/53
//	default/v4      ClusterIP 10.96.0.11, one unnamed port
//	default/db      headless, slices db-a (db-0 at 10.1.0.1; 10.1.0.2;
//	                10.1.0.3 not ready) and db-b (10.1.0.2 again; 10.1.0.4), port mysql/TCP/3306
//	default/pnr     headless, publishNotReadyAddresses, 10.2.0.1 not ready
//	default/db6     headless, fd00::1:2
//	default/bare    headless without ports, 10.3.0.1
//	default/int     ExternalName web.default.svc.cluster.local
//	default/ext     ExternalName example.com (resolved by up)
//	default/extip   ExternalName 192.0.2.1
//	kube-system/kube-dns ClusterIP 10.96.0.53, its endpoint 192.0.2.10 (the server's own address)
func testServer(t *testing.T, up *upstream) *Server {
	t.Helper()
	opts := Options{Listen: "192.0.2.10:53", Upstreams: []string{}}
	if up != nil {
		opts.Upstreams = []string{up.addr}
	}
	s, err := newServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.isSynced.Store(true)
	svcH, sliceH := s.idx.handlers()
	for _, svc := range []*corev1.Service{
		newService("default", "web", []string{"10.96.0.10", "fd00::10"}, svcPort{"http", corev1.ProtocolTCP, 80}, svcPort{"dns", corev1.ProtocolUDP, 53}),
		newService("default", "v4", []string{"10.96.0.11"}, svcPort{"", corev1.ProtocolTCP, 8080}),
		newService("default", "db", []string{"None"}),
		func() *corev1.Service {
			s := newService("default", "pnr", []string{"None"})
			s.Spec.PublishNotReadyAddresses = true
			return s
		}(),
		newService("default", "db6", []string{"None"}),
		newService("default", "bare", []string{"None"}),
		externalService("default", "int", "web.default.svc.cluster.local"),
		externalService("default", "ext", "example.com"),
		externalService("default", "extip", "192.0.2.1"),
		newService("kube-system", "kube-dns", []string{"10.96.0.53"}, svcPort{"dns", corev1.ProtocolUDP, 53}, svcPort{"dns-tcp", corev1.ProtocolTCP, 53}),
	} {
		svcH.OnAdd(svc, true)
	}
	mysql := svcPort{"mysql", corev1.ProtocolTCP, 3306}
	for _, es := range []any{
		newSlice("default", "db-a", "db", []ep{{"10.1.0.1", "db-0", yes}, {"10.1.0.2", "", nil}, {"10.1.0.3", "", no}}, mysql),
		newSlice("default", "db-b", "db", []ep{{"10.1.0.2", "", yes}, {"10.1.0.4", "", yes}}, mysql),
		newSlice("default", "pnr-a", "pnr", []ep{{"10.2.0.1", "", no}}, svcPort{"http", corev1.ProtocolTCP, 80}),
		newSlice("default", "db6-a", "db6", []ep{{"fd00::1:2", "", yes}}, mysql),
		newSlice("default", "bare-a", "bare", []ep{{"10.3.0.1", "", yes}}),
		newSlice("default", "web-a", "web", []ep{{"10.4.0.1", "", yes}}, svcPort{"http", corev1.ProtocolTCP, 8080}),
		newSlice("kube-system", "kube-dns-n1", "kube-dns", []ep{{"192.0.2.10", "", yes}}, svcPort{"dns", corev1.ProtocolUDP, 53}),
	} {
		sliceH.OnAdd(es, true)
	}
	return s
}

// ask is s's answer to name/qtype over UDP with EDNS0.
func ask(t *testing.T, s *Server, name string, qtype uint16) *mdns.Msg {
	t.Helper()
	r := query(name, qtype)
	r.SetEdns0(4096, false)
	m, _ := s.answer(r, false)
	if _, err := m.Pack(); err != nil {
		t.Fatalf("%s %s: the answer does not pack: %v", name, mdns.TypeToString[qtype], err)
	}
	return m
}

func TestAnswers(t *testing.T) {
	up := startUpstream(t, internet)
	s := testServer(t, up)
	const soa = "cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local."
	A, AAAA, SRV, TXT, CNAME, PTR, MX, NS, SOA := mdns.TypeA, mdns.TypeAAAA, mdns.TypeSRV, mdns.TypeTXT, mdns.TypeCNAME, mdns.TypePTR, mdns.TypeMX, mdns.TypeNS, mdns.TypeSOA
	nodata, nxdomain := mdns.RcodeSuccess, mdns.RcodeNameError
	for _, tc := range []struct {
		name   string
		qtype  uint16
		rcode  int
		answer []string
		extra  []string
	}{
		// ClusterIP Services.
		{"web.default.svc.cluster.local.", A, 0, []string{"web.default.svc.cluster.local. 5 IN A 10.96.0.10"}, nil},
		{"web.default.svc.cluster.local.", AAAA, 0, []string{"web.default.svc.cluster.local. 5 IN AAAA fd00::10"}, nil},
		{"Web.Default.SVC.cluster.local.", A, 0, []string{"Web.Default.SVC.cluster.local. 5 IN A 10.96.0.10"}, nil},
		{"v4.default.svc.cluster.local.", AAAA, nodata, nil, nil},
		{"missing.default.svc.cluster.local.", A, nxdomain, nil, nil},
		{"web.other.svc.cluster.local.", A, nxdomain, nil, nil},
		// An endpoint of a ClusterIP Service is found by name, as in CoreDNS.
		{"10-4-0-1.web.default.svc.cluster.local.", A, 0, []string{"10-4-0-1.web.default.svc.cluster.local. 5 IN A 10.4.0.1"}, nil},

		// Headless Services: ready endpoints, merged across slices.
		{"db.default.svc.cluster.local.", A, 0, []string{
			"db.default.svc.cluster.local. 5 IN A 10.1.0.1", "db.default.svc.cluster.local. 5 IN A 10.1.0.2", "db.default.svc.cluster.local. 5 IN A 10.1.0.4"}, nil},
		{"db.default.svc.cluster.local.", AAAA, nodata, nil, nil},
		{"db-0.db.default.svc.cluster.local.", A, 0, []string{"db-0.db.default.svc.cluster.local. 5 IN A 10.1.0.1"}, nil},
		{"10-1-0-2.db.default.svc.cluster.local.", A, 0, []string{"10-1-0-2.db.default.svc.cluster.local. 5 IN A 10.1.0.2"}, nil},
		{"10-1-0-1.db.default.svc.cluster.local.", A, nxdomain, nil, nil}, // it has a hostname
		{"10-1-0-3.db.default.svc.cluster.local.", A, nxdomain, nil, nil}, // not ready
		{"pnr.default.svc.cluster.local.", A, 0, []string{"pnr.default.svc.cluster.local. 5 IN A 10.2.0.1"}, nil},
		{"db6.default.svc.cluster.local.", AAAA, 0, []string{"db6.default.svc.cluster.local. 5 IN AAAA fd00::1:2"}, nil},
		{"fd00--1-2.db6.default.svc.cluster.local.", AAAA, 0, []string{"fd00--1-2.db6.default.svc.cluster.local. 5 IN AAAA fd00::1:2"}, nil},
		{"bare.default.svc.cluster.local.", A, 0, []string{"bare.default.svc.cluster.local. 5 IN A 10.3.0.1"}, nil},

		// SRV.
		{"_http._tcp.web.default.svc.cluster.local.", SRV, 0,
			[]string{"_http._tcp.web.default.svc.cluster.local. 5 IN SRV 0 50 80 web.default.svc.cluster.local."},
			[]string{"web.default.svc.cluster.local. 5 IN A 10.96.0.10", "web.default.svc.cluster.local. 5 IN AAAA fd00::10"}},
		{"_dns._udp.web.default.svc.cluster.local.", SRV, 0,
			[]string{"_dns._udp.web.default.svc.cluster.local. 5 IN SRV 0 50 53 web.default.svc.cluster.local."},
			[]string{"web.default.svc.cluster.local. 5 IN A 10.96.0.10", "web.default.svc.cluster.local. 5 IN AAAA fd00::10"}},
		{"_http._udp.web.default.svc.cluster.local.", SRV, nxdomain, nil, nil},
		{"_nope._tcp.web.default.svc.cluster.local.", SRV, nxdomain, nil, nil},
		{"_http._tcp.web.default.svc.cluster.local.", A, 0, []string{"_http._tcp.web.default.svc.cluster.local. 5 IN A 10.96.0.10"}, nil},
		{"web.default.svc.cluster.local.", SRV, 0,
			[]string{"web.default.svc.cluster.local. 5 IN SRV 0 25 53 web.default.svc.cluster.local.", "web.default.svc.cluster.local. 5 IN SRV 0 25 80 web.default.svc.cluster.local."},
			[]string{"web.default.svc.cluster.local. 5 IN A 10.96.0.10", "web.default.svc.cluster.local. 5 IN AAAA fd00::10"}},
		{"_mysql._tcp.db.default.svc.cluster.local.", SRV, 0, []string{
			"_mysql._tcp.db.default.svc.cluster.local. 5 IN SRV 0 33 3306 10-1-0-2.db.default.svc.cluster.local.",
			"_mysql._tcp.db.default.svc.cluster.local. 5 IN SRV 0 33 3306 10-1-0-4.db.default.svc.cluster.local.",
			"_mysql._tcp.db.default.svc.cluster.local. 5 IN SRV 0 33 3306 db-0.db.default.svc.cluster.local.",
		}, []string{
			"10-1-0-2.db.default.svc.cluster.local. 5 IN A 10.1.0.2",
			"10-1-0-4.db.default.svc.cluster.local. 5 IN A 10.1.0.4",
			"db-0.db.default.svc.cluster.local. 5 IN A 10.1.0.1",
		}},
		{"db-0.db.default.svc.cluster.local.", SRV, 0,
			[]string{"db-0.db.default.svc.cluster.local. 5 IN SRV 0 100 3306 db-0.db.default.svc.cluster.local."},
			[]string{"db-0.db.default.svc.cluster.local. 5 IN A 10.1.0.1"}},
		{"bare.default.svc.cluster.local.", SRV, nodata, nil, nil}, // no ports

		// ExternalName.
		{"int.default.svc.cluster.local.", A, 0, []string{
			"int.default.svc.cluster.local. 5 IN CNAME web.default.svc.cluster.local.", "web.default.svc.cluster.local. 5 IN A 10.96.0.10"}, nil},
		{"ext.default.svc.cluster.local.", A, 0, []string{"example.com. 300 IN A 192.0.2.80", "ext.default.svc.cluster.local. 5 IN CNAME example.com."}, nil},
		{"ext.default.svc.cluster.local.", AAAA, 0, []string{"example.com. 300 IN AAAA 2001:db8::80", "ext.default.svc.cluster.local. 5 IN CNAME example.com."}, nil},
		{"ext.default.svc.cluster.local.", CNAME, 0, []string{"ext.default.svc.cluster.local. 5 IN CNAME example.com."}, nil},
		{"web.default.svc.cluster.local.", CNAME, nodata, nil, nil},
		{"ext.default.svc.cluster.local.", SRV, nodata, nil, nil},
		{"_http._tcp.ext.default.svc.cluster.local.", SRV, nxdomain, nil, nil},
		{"extip.default.svc.cluster.local.", A, nxdomain, nil, nil},

		// Pods.
		{"10-244-1-7.default.pod.cluster.local.", A, 0, []string{"10-244-1-7.default.pod.cluster.local. 5 IN A 10.244.1.7"}, nil},
		{"10-244-1-7.default.pod.cluster.local.", AAAA, nodata, nil, nil},
		{"fd00--7.default.pod.cluster.local.", AAAA, 0, []string{"fd00--7.default.pod.cluster.local. 5 IN AAAA fd00::7"}, nil},
		{"not-an-ip.default.pod.cluster.local.", A, nxdomain, nil, nil},
		{"default.pod.cluster.local.", A, nodata, nil, nil},

		// Namespaces and the zone.
		{"default.svc.cluster.local.", A, nodata, nil, nil},
		{"nope.svc.cluster.local.", A, nxdomain, nil, nil},
		{"svc.cluster.local.", A, nodata, nil, nil},
		{"cluster.local.", A, nodata, nil, nil},
		{"cluster.local.", NS, 0, []string{"cluster.local. 5 IN NS kube-dns.kube-system.svc.cluster.local."},
			[]string{"kube-dns.kube-system.svc.cluster.local. 5 IN A 10.96.0.53"}},
		{"ns.dns.cluster.local.", A, 0, []string{"ns.dns.cluster.local. 5 IN A 10.96.0.53"}, nil},
		{"dns-version.cluster.local.", TXT, 0, []string{`dns-version.cluster.local. 28800 IN TXT "1.1.0"`}, nil},
		{"web.default.svc.cluster.local.", TXT, nodata, nil, nil},
		{"web.default.svc.cluster.local.", MX, nodata, nil, nil},
		{"missing.default.svc.cluster.local.", MX, nxdomain, nil, nil},
		{"web.default.svc.cluster.local.", SOA, nodata, nil, nil},
		{"web.default.svc.cluster.local.", PTR, nodata, nil, nil},
		{"foo.example.cluster.local.", A, nxdomain, nil, nil},
		{"a.b.c.web.default.svc.cluster.local.", A, nxdomain, nil, nil},

		// Reverse.
		{"10.0.96.10.in-addr.arpa.", PTR, 0, []string{"10.0.96.10.in-addr.arpa. 5 IN PTR web.default.svc.cluster.local."}, nil},
		{reverseName("fd00::10"), PTR, 0, []string{reverseName("fd00::10") + " 5 IN PTR web.default.svc.cluster.local."}, nil},
		{"1.0.1.10.in-addr.arpa.", PTR, 0, []string{"1.0.1.10.in-addr.arpa. 5 IN PTR db-0.db.default.svc.cluster.local."}, nil},
		{"2.0.1.10.in-addr.arpa.", PTR, 0, []string{"2.0.1.10.in-addr.arpa. 5 IN PTR 10-1-0-2.db.default.svc.cluster.local."}, nil},
		{reverseName("fd00::1:2"), PTR, 0, []string{reverseName("fd00::1:2") + " 5 IN PTR fd00--1-2.db6.default.svc.cluster.local."}, nil},
		// Not the cluster's (not ready, unknown): the upstream's answer.
		{"3.0.1.10.in-addr.arpa.", PTR, nxdomain, nil, nil},
		{"9.9.9.10.in-addr.arpa.", PTR, nxdomain, nil, nil},

		// Outside the cluster.
		{"example.com.", A, 0, []string{"example.com. 300 IN A 192.0.2.80"}, nil},
		{"v4.example.com.", AAAA, nodata, nil, nil},
	} {
		t.Run(tc.name+"/"+mdns.TypeToString[tc.qtype], func(t *testing.T) {
			m := ask(t, s, tc.name, tc.qtype)
			if m.Rcode != tc.rcode {
				t.Errorf("rcode %s, want %s", mdns.RcodeToString[m.Rcode], mdns.RcodeToString[tc.rcode])
			}
			if d := cmp.Diff(tc.answer, rrStrings(m.Answer)); d != "" {
				t.Errorf("answer (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.extra, rrStrings(m.Extra)); d != "" {
				t.Errorf("additional (-want +got):\n%s", d)
			}
			ours := strings.HasSuffix(strings.ToLower(tc.name), ".cluster.local.") || len(tc.answer) > 0 && strings.HasSuffix(tc.name, ".arpa.")
			if ours && !m.Authoritative {
				t.Errorf("not authoritative")
			}
			if strings.HasSuffix(strings.ToLower(tc.name), ".cluster.local.") && len(m.Answer) == 0 {
				if len(m.Ns) != 1 || !strings.HasPrefix(rrStrings(m.Ns)[0], soa) {
					t.Errorf("authority %v, want the zone's SOA", m.Ns)
				}
			}
		})
	}
	if n := up.count("3.0.1.10.in-addr.arpa. PTR udp"); n != 1 {
		t.Errorf("an unknown reverse name went %d times to the upstream, want once", n)
	}
	if n := up.count("web.default.svc.cluster.local. A udp"); n != 0 {
		t.Errorf("a cluster name went to the upstream")
	}
}

func reverseName(ip string) string {
	n, err := mdns.ReverseAddr(ip)
	if err != nil {
		panic(err)
	}
	return n
}

func TestSOA(t *testing.T) {
	s := testServer(t, nil)
	m := ask(t, s, "cluster.local.", mdns.TypeSOA)
	if len(m.Answer) != 1 {
		t.Fatalf("answer %v", m.Answer)
	}
	soa := m.Answer[0].(*mdns.SOA)
	if soa.Ns != "ns.dns.cluster.local." || soa.Mbox != "hostmaster.cluster.local." || soa.Minttl != 5 || soa.Hdr.Ttl != 5 ||
		soa.Refresh != 7200 || soa.Retry != 1800 || soa.Expire != 86400 || soa.Serial == 0 {
		t.Errorf("SOA %v", soa)
	}
}

// TestIndexEvents checks that updates and deletions (also through a
// tombstone) reach the answers, and that the reverse index follows.
func TestIndexEvents(t *testing.T) {
	s := testServer(t, nil)
	svcH, sliceH := s.idx.handlers()
	addrs := func(name string) []string {
		var out []string
		for _, rr := range ask(t, s, name, mdns.TypeA).Answer {
			out = append(out, rr.(*mdns.A).A.String())
		}
		slices.Sort(out)
		return out
	}
	ptr := func(ip string) []string {
		var out []string
		for _, rr := range ask(t, s, reverseName(ip), mdns.TypePTR).Answer {
			if p, ok := rr.(*mdns.PTR); ok {
				out = append(out, p.Ptr)
			}
		}
		return out
	}

	// A Service's cluster IP changes.
	old := newService("default", "web", []string{"10.96.0.10", "fd00::10"}, svcPort{"http", corev1.ProtocolTCP, 80})
	web := newService("default", "web", []string{"10.96.0.20"}, svcPort{"http", corev1.ProtocolTCP, 80})
	svcH.OnUpdate(old, web)
	if got := addrs("web.default.svc.cluster.local."); !slices.Equal(got, []string{"10.96.0.20"}) {
		t.Errorf("after the update: %v", got)
	}
	if got := ptr("10.96.0.10"); got != nil {
		t.Errorf("PTR of the old cluster IP: %v", got)
	}
	if got := ptr("10.96.0.20"); !slices.Equal(got, []string{"web.default.svc.cluster.local."}) {
		t.Errorf("PTR of the new cluster IP: %v", got)
	}

	// A slice loses an endpoint; another moves to a new Service.
	sliceH.OnUpdate(nil, newSlice("default", "db-b", "db", []ep{{"10.1.0.4", "", yes}}, svcPort{"mysql", corev1.ProtocolTCP, 3306}))
	if got := addrs("db.default.svc.cluster.local."); !slices.Equal(got, []string{"10.1.0.1", "10.1.0.2", "10.1.0.4"}) {
		t.Errorf("10.1.0.2 is still in db-a: %v", got)
	}
	sliceH.OnUpdate(nil, newSlice("default", "db-a", "bare", []ep{{"10.1.0.1", "db-0", yes}}))
	if got := addrs("db.default.svc.cluster.local."); !slices.Equal(got, []string{"10.1.0.4"}) {
		t.Errorf("db after db-a moved: %v", got)
	}
	if got := addrs("bare.default.svc.cluster.local."); !slices.Equal(got, []string{"10.1.0.1", "10.3.0.1"}) {
		t.Errorf("bare after db-a moved: %v", got)
	}
	if got := ptr("10.1.0.1"); !slices.Equal(got, []string{"db-0.bare.default.svc.cluster.local."}) {
		t.Errorf("PTR after db-a moved: %v", got)
	}
	if got := ptr("10.1.0.2"); got != nil {
		t.Errorf("PTR of a removed endpoint: %v", got)
	}

	// Deletions, one through a tombstone.
	svcH.OnDelete(cache.DeletedFinalStateUnknown{Key: "default/web", Obj: web})
	if m := ask(t, s, "web.default.svc.cluster.local.", mdns.TypeA); m.Rcode != mdns.RcodeNameError {
		t.Errorf("deleted Service: %s", mdns.RcodeToString[m.Rcode])
	}
	if got := ptr("10.96.0.20"); got != nil {
		t.Errorf("PTR of a deleted Service: %v", got)
	}
	sliceH.OnDelete(newSlice("default", "db-b", "db", nil))
	if m := ask(t, s, "db.default.svc.cluster.local.", mdns.TypeA); m.Rcode != mdns.RcodeNameError {
		// A headless Service without endpoints does not exist, as in CoreDNS.
		t.Errorf("headless Service without endpoints: %s", mdns.RcodeToString[m.Rcode])
	}

	// Everything gone: the index is empty.
	for _, k := range []string{"default/db-a", "default/pnr-a", "default/db6-a", "default/bare-a", "default/web-a", "kube-system/kube-dns-n1"} {
		ns, name, _ := strings.Cut(k, "/")
		sliceH.OnDelete(newSlice(ns, name, "x", nil))
	}
	for _, svc := range []string{"default/v4", "default/db", "default/pnr", "default/db6", "default/bare", "default/int", "default/ext", "default/extip", "kube-system/kube-dns"} {
		ns, name, _ := strings.Cut(svc, "/")
		svcH.OnDelete(newService(ns, name, nil))
	}
	ix := s.idx
	if len(ix.services)+len(ix.slices)+len(ix.bySvc)+len(ix.ptr)+len(ix.namespaces) != 0 {
		t.Errorf("index not empty: %d services, %d slices, %d bySvc, %d ptr, %d namespaces",
			len(ix.services), len(ix.slices), len(ix.bySvc), len(ix.ptr), len(ix.namespaces))
	}
}

func TestNotSynced(t *testing.T) {
	s := testServer(t, nil)
	s.isSynced.Store(false)
	for _, name := range []string{"web.default.svc.cluster.local.", "10.0.96.10.in-addr.arpa."} {
		if m := ask(t, s, name, mdns.TypeA); m.Rcode != mdns.RcodeServerFailure {
			t.Errorf("%s before sync: %s", name, mdns.RcodeToString[m.Rcode])
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		base string
		want request
		ok   bool
	}{
		{"", request{}, true},
		{"svc", request{}, true},
		{"ns.svc", request{kind: "svc", namespace: "ns"}, true},
		{"web.ns.svc", request{kind: "svc", namespace: "ns", service: "web"}, true},
		{"db-0.web.ns.svc", request{kind: "svc", namespace: "ns", service: "web", endpoint: "db-0"}, true},
		{"_http._tcp.web.ns.svc", request{kind: "svc", namespace: "ns", service: "web", port: "http", proto: "tcp"}, true},
		{"1-2-3-4.ns.pod", request{kind: "pod", namespace: "ns", service: "1-2-3-4"}, true},
		{"a.b.c.web.ns.svc", request{}, false},
		{"web.ns.other", request{}, false},
	} {
		got, ok := parse(tc.base)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parse(%q) = %+v, %v; want %+v, %v", tc.base, got, ok, tc.want, tc.ok)
		}
	}
}

func TestReverseAddr(t *testing.T) {
	for _, ip := range []string{"10.96.0.1", "0.0.0.0", "255.255.255.255", "fd00::1:2", "2001:db8::ff", "::1"} {
		got, ok := reverseAddr(reverseName(ip))
		if !ok || got != netip.MustParseAddr(ip) {
			t.Errorf("reverseAddr(%s) = %v, %v", reverseName(ip), got, ok)
		}
	}
	for _, name := range []string{"in-addr.arpa.", "1.10.in-addr.arpa.", "1.0.0.256.in-addr.arpa.", "01.0.0.10.in-addr.arpa.", "x.0.0.10.in-addr.arpa.",
		"1.0.ip6.arpa.", strings.Repeat("g.", 32) + "ip6.arpa.", "1.2.3.4.example."} {
		if got, ok := reverseAddr(name); ok {
			t.Errorf("reverseAddr(%s) = %v", name, got)
		}
	}
}

func TestEndpointHostname(t *testing.T) {
	for ip, want := range map[string]string{"10.1.2.3": "10-1-2-3", "fd00::1:2": "fd00--1-2", "fd00::": "fd00--0", "2001:db8:1:2:3:4:5:6": "2001-db8-1-2-3-4-5-6"} {
		if got := endpointHostname(endpoint{addr: netip.MustParseAddr(ip)}); got != want {
			t.Errorf("endpointHostname(%s) = %s, want %s", ip, got, want)
		}
	}
}
