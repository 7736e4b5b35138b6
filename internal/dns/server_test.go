package dns

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// runServer runs s until the test ends and returns its address.
func runServer(t *testing.T, s *Server) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	for deadline := time.Now().Add(5 * time.Second); s.Addr() == ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server does not listen")
		}
	}
	return s.Addr()
}

// TestTruncation: over UDP an answer larger than the client's buffer
// (512 bytes without EDNS0) comes truncated with TC set; over TCP whole.
func TestTruncation(t *testing.T) {
	up := startUpstream(t, internet)
	s, err := newServer(Options{Listen: "127.0.0.1:0", Upstreams: []string{up.addr}})
	if err != nil {
		t.Fatal(err)
	}
	var eps []ep
	for i := range 100 {
		eps = append(eps, ep{fmt.Sprintf("10.9.0.%d", i+1), "", yes})
	}
	svcH, sliceH := s.idx.handlers()
	svcH.OnAdd(newService("default", "many", []string{"None"}), true)
	sliceH.OnAdd(newSlice("default", "many-a", "many", eps, svcPort{"http", corev1.ProtocolTCP, 80}), true)
	addr := runServer(t, s)
	<-s.Ready()

	for _, name := range []string{"many.default.svc.cluster.local.", "big.example.com."} {
		t.Run(name, func(t *testing.T) {
			m := exchange(t, "udp", addr, query(name, mdns.TypeA))
			if !m.Truncated || len(m.Answer) == 0 || len(m.Answer) >= 100 {
				t.Errorf("UDP without EDNS0: TC %v, %d records", m.Truncated, len(m.Answer))
			}
			if m.Compress = true; m.Len() > 512 {
				t.Errorf("UDP answer of %d bytes", m.Len())
			}
			q := query(name, mdns.TypeA)
			q.SetEdns0(1232, false)
			m = exchange(t, "udp", addr, q)
			if !m.Truncated || m.IsEdns0() == nil {
				t.Errorf("UDP with a 1232-byte buffer: TC %v, %d records, OPT %v", m.Truncated, len(m.Answer), m.IsEdns0())
			}
			if m.Compress = true; m.Len() > 1232 {
				t.Errorf("UDP answer of %d bytes", m.Len())
			}
			q = query(name, mdns.TypeA)
			q.SetEdns0(4096, false)
			if m := exchange(t, "udp", addr, q); m.Truncated || len(m.Answer) != 100 {
				t.Errorf("UDP with a 4096-byte buffer: TC %v, %d records", m.Truncated, len(m.Answer))
			}
			if m := exchange(t, "tcp", addr, query(name, mdns.TypeA)); m.Truncated || len(m.Answer) != 100 {
				t.Errorf("TCP: TC %v, %d records", m.Truncated, len(m.Answer))
			}
		})
	}
	// The forwarder asked over UDP, got a truncated answer, asked again
	// over TCP, and cached the whole answer.
	if u, tc := up.count("big.example.com. A udp"), up.count("big.example.com. A tcp"); u != 1 || tc != 1 {
		t.Errorf("upstream asked %d times over UDP, %d over TCP; want once each", u, tc)
	}
}

// TestForwardOverTCP: a client asking over TCP is forwarded over TCP.
func TestForwardOverTCP(t *testing.T) {
	up := startUpstream(t, internet)
	s, err := newServer(Options{Listen: "127.0.0.1:0", Upstreams: []string{up.addr}})
	if err != nil {
		t.Fatal(err)
	}
	addr := runServer(t, s)
	if m := exchange(t, "tcp", addr, query("nx.example.com.", mdns.TypeA)); m.Rcode != mdns.RcodeNameError || len(m.Ns) != 1 {
		t.Errorf("answer %v", m)
	}
	if n := up.count("nx.example.com. A tcp"); n != 1 {
		t.Errorf("upstream asked %d times over TCP", n)
	}
}

// TestMalformed: bad queries get FORMERR, NOTIMP, REFUSED or BADVERS, or
// nothing; none stops the server.
func TestMalformed(t *testing.T) {
	s, err := newServer(Options{Listen: "127.0.0.1:0", Upstreams: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	svcH, _ := s.idx.handlers()
	svcH.OnAdd(newService("default", "web", []string{"10.96.0.10"}, svcPort{"http", corev1.ProtocolTCP, 80}), true)
	addr := runServer(t, s)
	<-s.Ready()

	// Garbage, a truncated header, a header claiming a missing question.
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, b := range [][]byte{{1, 2, 3}, make([]byte, 12), {0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 7, 'x'}, {0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c, 0, 1, 0, 1}} {
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	// Over TCP: a length prefix with too few bytes, then a closed connection.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Write([]byte{0, 40, 1, 2, 3})
		c.Close()
	}

	two := query("web.default.svc.cluster.local.", mdns.TypeA)
	two.Question = append(two.Question, two.Question[0])
	notify := query("cluster.local.", mdns.TypeSOA)
	notify.Opcode = mdns.OpcodeNotify
	update := query("cluster.local.", mdns.TypeSOA)
	update.Opcode = mdns.OpcodeUpdate
	chaos := query("version.bind.", mdns.TypeTXT)
	chaos.Question[0].Qclass = mdns.ClassCHAOS
	badvers := query("web.default.svc.cluster.local.", mdns.TypeA)
	badvers.SetEdns0(1232, false)
	badvers.IsEdns0().SetVersion(1)
	axfr := query("cluster.local.", mdns.TypeAXFR)
	for _, tc := range []struct {
		name  string
		q     *mdns.Msg
		rcode int
	}{
		{"two questions", two, mdns.RcodeFormatError},
		{"NOTIFY", notify, mdns.RcodeNotImplemented},
		{"UPDATE", update, mdns.RcodeNotImplemented},
		{"CHAOS class", chaos, mdns.RcodeRefused},
		{"EDNS version 1", badvers, mdns.RcodeBadVers},
		{"AXFR", axfr, mdns.RcodeRefused},
	} {
		if m := exchange(t, "udp", addr, tc.q); m.Rcode != tc.rcode {
			t.Errorf("%s: rcode %s, want %s", tc.name, mdns.RcodeToString[m.Rcode], mdns.RcodeToString[tc.rcode])
		}
	}
	// Still serving.
	for _, proto := range []string{"udp", "tcp"} {
		if m := exchange(t, proto, addr, query("web.default.svc.cluster.local.", mdns.TypeA)); len(m.Answer) != 1 {
			t.Errorf("%s after bad queries: %v", proto, m)
		}
	}
}

// TestReady: until the informers sync, the cluster's names are SERVFAIL
// (others are forwarded); Ready is closed once they have.
func TestReady(t *testing.T) {
	up := startUpstream(t, internet)
	s, err := newServer(Options{Listen: "127.0.0.1:0", Upstreams: []string{up.addr}})
	if err != nil {
		t.Fatal(err)
	}
	var synced atomic.Bool
	s.synced = []cache.InformerSynced{synced.Load}
	svcH, _ := s.idx.handlers()
	svcH.OnAdd(newService("default", "web", []string{"10.96.0.10"}, svcPort{"http", corev1.ProtocolTCP, 80}), true)
	addr := runServer(t, s)
	if m := exchange(t, "udp", addr, query("web.default.svc.cluster.local.", mdns.TypeA)); m.Rcode != mdns.RcodeServerFailure {
		t.Errorf("before sync: %v", m)
	}
	if m := exchange(t, "udp", addr, query("example.com.", mdns.TypeA)); len(m.Answer) != 1 {
		t.Errorf("forwarding before sync: %v", m)
	}
	select {
	case <-s.Ready():
		t.Fatal("ready before sync")
	default:
	}
	synced.Store(true)
	select {
	case <-s.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("not ready after sync")
	}
	if m := exchange(t, "udp", addr, query("web.default.svc.cluster.local.", mdns.TypeA)); len(m.Answer) != 1 {
		t.Errorf("after sync: %v", m)
	}
}
