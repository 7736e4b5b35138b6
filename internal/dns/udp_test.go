package dns

import (
	"net"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
)

// TestAnswerCache: a repeated query is answered from the kept answer,
// with its own ID and its own spelling of the name; a change to the
// index is answered at once; answers with records from the upstreams are
// not kept (the forwarder's cache follows their TTLs).
func TestAnswerCache(t *testing.T) {
	up := startUpstream(t, internet)
	s, err := newServer(Options{Listen: "127.0.0.1:0", Upstreams: []string{up.addr}})
	if err != nil {
		t.Fatal(err)
	}
	svcH, _ := s.idx.handlers()
	web := newService("default", "web", []string{"10.96.0.10"}, svcPort{"http", corev1.ProtocolTCP, 80})
	svcH.OnAdd(web, true)
	svcH.OnAdd(externalService("default", "ext", "example.com"), true)
	addr := runServer(t, s)
	<-s.Ready()

	askA := func(name string, id uint16) *mdns.Msg {
		t.Helper()
		q := query(name, mdns.TypeA)
		q.Id = id
		m := exchange(t, "udp", addr, q)
		if m.Id != id {
			t.Errorf("%s: answer ID %d, want %d", name, m.Id, id)
		}
		return m
	}
	for i, name := range []string{"web.default.svc.cluster.local.", "web.default.svc.cluster.local.", "Web.Default.svc.cluster.local."} {
		m := askA(name, uint16(100+i))
		if got := rrStrings(m.Answer); len(got) != 1 || got[0] != name+" 5 IN A 10.96.0.10" {
			t.Errorf("query %d: answer %q", i, got)
		}
	}
	if n := s.answers.size(); n != 2 {
		t.Errorf("%d answers kept, want 2 (one per spelling)", n)
	}

	moved := web.DeepCopy()
	moved.Spec.ClusterIP, moved.Spec.ClusterIPs = "10.96.0.20", []string{"10.96.0.20"}
	svcH.OnUpdate(web, moved)
	if got := rrStrings(askA("web.default.svc.cluster.local.", 200).Answer); len(got) != 1 || got[0] != "web.default.svc.cluster.local. 5 IN A 10.96.0.20" {
		t.Errorf("after the Service changed: %q", got)
	}

	for i := range 2 {
		if got := rrStrings(askA("ext.default.svc.cluster.local.", uint16(300+i)).Answer); len(got) != 2 {
			t.Errorf("ExternalName: %q", got)
		}
	}
	ext, _ := query("ext.default.svc.cluster.local.", mdns.TypeA).Pack()
	if s.answers.get(s.idx.generation.Load(), ext) != nil {
		t.Error("an answer with the upstreams' records was kept")
	}
}

// TestUnpackableQuery: a query that cannot be unpacked gets FORMERR with
// its ID, and the server goes on.
func TestUnpackableQuery(t *testing.T) {
	s, err := newServer(Options{Listen: "127.0.0.1:0", Upstreams: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	addr := runServer(t, s)
	<-s.Ready()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// ID 0x0102, RD, one question whose name runs past the end.
	if _, err := conn.Write([]byte{1, 2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 7, 'x'}); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	var m mdns.Msg
	if err := m.Unpack(buf[:n]); err != nil {
		t.Fatalf("answer %x: %v", buf[:n], err)
	}
	if m.Id != 0x0102 || !m.Response || !m.RecursionDesired || m.Rcode != mdns.RcodeFormatError {
		t.Errorf("answer: %v", &m)
	}
}

func (c *answerCache) size() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.answers)
}
