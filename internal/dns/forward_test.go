package dns

import (
	"context"
	"net"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
)

// fakeClock is a settable clock for the cache.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestForwardCache(t *testing.T) {
	up := startUpstream(t, internet)
	f := newForwarder([]string{up.addr}, testServer(t, nil).log)
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	f.cache.now = clock.now
	ctx := context.Background()
	resolve := func(name string, qtype uint16) *mdns.Msg {
		t.Helper()
		m, err := f.resolve(ctx, mdns.Question{Name: name, Qtype: qtype, Qclass: mdns.ClassINET}, false, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return m
	}

	// A positive answer (TTL 300) is kept 30s, its TTLs counting down.
	if m := resolve("example.com.", mdns.TypeA); len(m.Answer) != 1 || m.Answer[0].Header().Ttl != 300 {
		t.Fatalf("answer %v", m.Answer)
	}
	clock.advance(10 * time.Second)
	m := resolve("EXAMPLE.com.", mdns.TypeA)
	if n := up.count("example.com. A udp"); n != 1 {
		t.Errorf("upstream asked %d times, want once (cached)", n)
	}
	if len(m.Answer) != 1 || m.Answer[0].Header().Ttl != 290 {
		t.Errorf("cached answer %v, want TTL 290", m.Answer)
	}
	m.Answer[0].Header().Ttl = 1 // the caller's copy
	clock.advance(19 * time.Second)
	if m := resolve("example.com.", mdns.TypeA); m.Answer[0].Header().Ttl != 271 || up.count("example.com. A udp") != 1 {
		t.Errorf("cached answer %v after 29s", m.Answer)
	}
	clock.advance(time.Second)
	resolve("example.com.", mdns.TypeA)
	if n := up.count("example.com. A udp"); n != 2 {
		t.Errorf("upstream asked %d times after 30s, want twice", n)
	}

	// Negative answers are kept for the SOA's minimum (10s).
	for _, q := range []struct {
		name  string
		qtype uint16
		rcode int
		key   string
	}{
		{"nx.example.com.", mdns.TypeA, mdns.RcodeNameError, "nx.example.com. A udp"},
		{"v4.example.com.", mdns.TypeAAAA, mdns.RcodeSuccess, "v4.example.com. AAAA udp"},
	} {
		if m := resolve(q.name, q.qtype); m.Rcode != q.rcode || len(m.Answer) != 0 {
			t.Errorf("%s: %v", q.name, m)
		}
		clock.advance(9 * time.Second)
		resolve(q.name, q.qtype)
		if n := up.count(q.key); n != 1 {
			t.Errorf("%s: upstream asked %d times in 9s, want once", q.name, n)
		}
		clock.advance(time.Second)
		resolve(q.name, q.qtype)
		if n := up.count(q.key); n != 2 {
			t.Errorf("%s: upstream asked %d times after 10s, want twice", q.name, n)
		}
	}

	// The cache is bounded.
	c := newMsgCache(3, 30*time.Second)
	for i, name := range []string{"a.", "b.", "c.", "d.", "e."} {
		m := new(mdns.Msg)
		m.SetQuestion(name, mdns.TypeA)
		m.Answer = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, byte(i))}}
		c.put(cacheKey{name: name, qtype: mdns.TypeA, qclass: mdns.ClassINET}, m)
	}
	if len(c.entries) != 3 {
		t.Errorf("%d entries, want 3", len(c.entries))
	}
	// Not kept: failures, truncated answers, answers without a TTL.
	fail := new(mdns.Msg)
	fail.Rcode = mdns.RcodeServerFailure
	tc := new(mdns.Msg)
	tc.Truncated = true
	tc.Answer = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: "x.", Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, 1)}}
	nosoa := new(mdns.Msg)
	nosoa.Rcode = mdns.RcodeNameError
	zero := new(mdns.Msg)
	zero.Answer = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: "x.", Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 0}, A: net.IPv4(192, 0, 2, 1)}}
	for _, m := range []*mdns.Msg{fail, tc, nosoa, zero} {
		if d := c.ttl(m); d != 0 {
			t.Errorf("cache TTL %v for %v", d, m)
		}
	}
}

func TestForwardFailover(t *testing.T) {
	good := startUpstream(t, internet)
	silent := startUpstream(t, func(*mdns.Msg, bool) *mdns.Msg { return nil })
	failing := startUpstream(t, func(r *mdns.Msg, _ bool) *mdns.Msg {
		m := new(mdns.Msg)
		m.SetRcode(r, mdns.RcodeServerFailure)
		return m
	})
	log := testServer(t, nil).log
	f := newForwarder([]string{silent.addr, failing.addr, good.addr}, log)
	f.timeout = 200 * time.Millisecond
	q := mdns.Question{Name: "example.com.", Qtype: mdns.TypeA, Qclass: mdns.ClassINET}
	m, err := f.resolve(context.Background(), q, false, false)
	if err != nil || len(m.Answer) != 1 {
		t.Fatalf("answer %v, %v", m, err)
	}
	if silent.queries.Load() != 1 || failing.queries.Load() != 1 || good.queries.Load() != 1 {
		t.Errorf("asked %d, %d, %d times", silent.queries.Load(), failing.queries.Load(), good.queries.Load())
	}

	// All failing: an error, SERVFAIL to the client.
	f = newForwarder([]string{silent.addr, failing.addr}, log)
	f.timeout = 200 * time.Millisecond
	if _, err := f.resolve(context.Background(), q, false, false); err == nil {
		t.Errorf("no error when every upstream failed")
	}
	s, err := newServer(Options{Listen: "127.0.0.1:0", Upstreams: []string{failing.addr}})
	if err != nil {
		t.Fatal(err)
	}
	if m := ask(t, s, "example.com.", mdns.TypeA); m.Rcode != mdns.RcodeServerFailure {
		t.Errorf("rcode %s when every upstream failed", mdns.RcodeToString[m.Rcode])
	}
	s, err = newServer(Options{Listen: "127.0.0.1:0", Upstreams: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if m := ask(t, s, "example.com.", mdns.TypeA); m.Rcode != mdns.RcodeServerFailure {
		t.Errorf("rcode %s without upstreams", mdns.RcodeToString[m.Rcode])
	}
}

func TestHostUpstreams(t *testing.T) {
	got := hostUpstreams([]string{"192.0.2.1", "192.0.2.2", "fd00::53", "junk"}, "192.0.2.2:53")
	want := []string{"192.0.2.1:53", "[fd00::53]:53"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("hostUpstreams = %v, want %v", got, want)
	}
	if got := hostUpstreams([]string{"192.0.2.2"}, "192.0.2.2:5353"); len(got) != 1 {
		t.Errorf("another port is no loop: %v", got)
	}
}
