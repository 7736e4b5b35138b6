package dns

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Test objects and helpers shared by the tests.

type svcPort struct {
	name  string
	proto corev1.Protocol
	port  int32
}

func newService(ns, name string, clusterIPs []string, ports ...svcPort) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: clusterIPs}}
	if len(clusterIPs) > 0 {
		s.Spec.ClusterIP = clusterIPs[0]
	}
	for _, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: p.name, Protocol: p.proto, Port: p.port})
	}
	return s
}

func externalService(ns, name, target string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: target}}
}

type ep struct {
	addr     string
	hostname string
	ready    *bool // nil: unknown
}

var (
	yes = func() *bool { b := true; return &b }()
	no  = func() *bool { b := false; return &b }()
)

func newSlice(ns, name, service string, eps []ep, ports ...svcPort) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{discoveryv1.LabelServiceName: service}}, AddressType: discoveryv1.AddressTypeIPv4}
	for _, e := range eps {
		de := discoveryv1.Endpoint{Addresses: []string{e.addr}, Conditions: discoveryv1.EndpointConditions{Ready: e.ready}}
		if e.hostname != "" {
			de.Hostname = &e.hostname
		}
		if strings.Contains(e.addr, ":") {
			es.AddressType = discoveryv1.AddressTypeIPv6
		}
		es.Endpoints = append(es.Endpoints, de)
	}
	for _, p := range ports {
		name, proto, port := p.name, p.proto, p.port
		es.Ports = append(es.Ports, discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &port})
	}
	return es
}

// rrStrings are rrs as "name ttl class type data" strings, sorted.
func rrStrings(rrs []mdns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if rr.Header().Rrtype == mdns.TypeOPT {
			continue
		}
		out = append(out, strings.Join(strings.Fields(rr.String()), " "))
	}
	slices.Sort(out)
	return out
}

func query(name string, qtype uint16) *mdns.Msg {
	m := new(mdns.Msg)
	m.SetQuestion(name, qtype)
	return m
}

// upstream is a fake DNS server on 127.0.0.1 (UDP and TCP on one port)
// counting the questions it gets.
type upstream struct {
	addr    string
	mu      sync.Mutex
	asked   map[string]int // "name type proto" → count
	answer  func(r *mdns.Msg, tcp bool) *mdns.Msg
	queries atomic.Int64
}

func startUpstream(t *testing.T, answer func(r *mdns.Msg, tcp bool) *mdns.Msg) *upstream {
	t.Helper()
	u := &upstream{asked: map[string]int{}, answer: answer}
	pc, l, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = l.Addr().String()
	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		_, tcp := w.RemoteAddr().(*net.TCPAddr)
		proto := "udp"
		if tcp {
			proto = "tcp"
		}
		u.queries.Add(1)
		u.mu.Lock()
		u.asked[strings.ToLower(r.Question[0].Name)+" "+mdns.TypeToString[r.Question[0].Qtype]+" "+proto]++
		u.mu.Unlock()
		if m := u.answer(r, tcp); m != nil {
			w.WriteMsg(m)
		}
	})
	servers := []*mdns.Server{{PacketConn: pc, Handler: h}, {Listener: l, Handler: h}}
	for _, s := range servers {
		started := make(chan struct{})
		s.NotifyStartedFunc = func() { close(started) }
		go s.ActivateAndServe()
		<-started
	}
	t.Cleanup(func() {
		for _, s := range servers {
			s.Shutdown()
		}
	})
	return u
}

func (u *upstream) count(key string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.asked[key]
}

// internet answers like a recursive resolver for a few names: A and AAAA
// of example.com (TTL 300), NXDOMAIN for nx.example.com and NODATA for
// AAAA of v4.example.com (SOA minimum 10), and NXDOMAIN with that SOA
// for any other name.
func internet(r *mdns.Msg, tcp bool) *mdns.Msg {
	m := new(mdns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	q := r.Question[0]
	soa := &mdns.SOA{Hdr: mdns.RR_Header{Name: "example.com.", Rrtype: mdns.TypeSOA, Class: mdns.ClassINET, Ttl: 60},
		Ns: "ns.example.com.", Mbox: "admin.example.com.", Serial: 1, Refresh: 1, Retry: 1, Expire: 1, Minttl: 10}
	name := strings.ToLower(q.Name)
	switch {
	case name == "example.com." && q.Qtype == mdns.TypeA:
		m.Answer = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 300}, A: net.ParseIP("192.0.2.80")}}
	case name == "example.com." && q.Qtype == mdns.TypeAAAA:
		m.Answer = []mdns.RR{&mdns.AAAA{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeAAAA, Class: mdns.ClassINET, Ttl: 300}, AAAA: net.ParseIP("2001:db8::80")}}
	case name == "v4.example.com.":
		if q.Qtype == mdns.TypeA {
			m.Answer = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 20}, A: net.ParseIP("192.0.2.4")}}
		} else {
			m.Ns = []mdns.RR{soa}
		}
	case name == "big.example.com.":
		// 100 addresses: more than fits in 512 bytes.
		for i := range 100 {
			m.Answer = append(m.Answer, &mdns.A{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 300},
				A: netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}).AsSlice()})
		}
		if !tcp {
			m.Truncate(mdns.MinMsgSize)
		}
	default:
		m.Rcode = mdns.RcodeNameError
		m.Ns = []mdns.RR{soa}
	}
	return m
}

// exchange asks the server at addr over proto ("udp" or "tcp").
func exchange(t *testing.T, proto, addr string, m *mdns.Msg) *mdns.Msg {
	t.Helper()
	c := &mdns.Client{Net: proto, Timeout: 5 * time.Second}
	r, _, err := c.ExchangeContext(context.Background(), m, addr)
	if err != nil {
		t.Fatalf("%s %v: %v", proto, m.Question, err)
	}
	return r
}
