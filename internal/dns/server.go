package dns

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mdns "github.com/miekg/dns"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/reconcile"
	"plainkube.dev/plainkube/internal/resolvconf"
)

// Options configure a Server.
type Options struct {
	// ClusterDomain is the zone served from the cluster (default
	// "cluster.local").
	ClusterDomain string
	// Listen is the "ip:port" served on both UDP and TCP (port 0 picks a
	// free one; Addr tells which).
	Listen string
	// Upstreams are the "ip:port" resolvers asked for names outside the
	// cluster. Nil: the host's (resolvconf.Host, port 53), less the
	// Listen address itself.
	Upstreams []string
	// Logger (default: discarded).
	Logger *slog.Logger
}

// Server is the cluster DNS server.
type Server struct {
	opts     Options
	zone     string // the cluster domain, lower case, fully qualified
	log      *slog.Logger
	idx      *index
	answers  answerCache // UDP answers made from idx
	fwd      *forwarder
	localIPs []netip.Addr // the listen address, when it is one to name in NS records
	synced   []cache.InformerSynced

	// ctx bounds the work of queries (the upstream exchanges); it ends
	// with Run.
	ctx      context.Context
	isSynced atomic.Bool
	ready    chan struct{}
	mu       sync.Mutex
	addr     string
}

// New makes a Server answering from factory's Services and EndpointSlices
// informers, which it registers; the caller starts factory.
func New(factory informers.SharedInformerFactory, opts Options) (*Server, error) {
	s, err := newServer(opts)
	if err != nil {
		return nil, err
	}
	svcH, sliceH := s.idx.handlers()
	svcReg, err := factory.Core().V1().Services().Informer().AddEventHandler(svcH)
	if err != nil {
		return nil, err
	}
	sliceReg, err := factory.Discovery().V1().EndpointSlices().Informer().AddEventHandler(sliceH)
	if err != nil {
		return nil, err
	}
	s.synced = []cache.InformerSynced{svcReg.HasSynced, sliceReg.HasSynced}
	return s, nil
}

// newServer is New without informers (the tests feed the index).
func newServer(opts Options) (*Server, error) {
	if opts.ClusterDomain == "" {
		opts.ClusterDomain = "cluster.local"
	}
	zone := strings.ToLower(mdns.Fqdn(strings.TrimSpace(opts.ClusterDomain)))
	if !validName(zone) {
		return nil, fmt.Errorf("cluster domain %q is not a domain name", opts.ClusterDomain)
	}
	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", opts.Listen, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = log.With("component", "dns")
	s := &Server{opts: opts, zone: zone, log: log, idx: newIndex(), ctx: context.Background(), ready: make(chan struct{})}
	if a, err := netip.ParseAddr(host); err == nil && !a.IsLoopback() && !a.IsUnspecified() {
		s.localIPs = []netip.Addr{a.Unmap()}
	}
	ups := opts.Upstreams
	if ups == nil {
		ups = hostUpstreams(resolvconf.Host().Servers, opts.Listen)
	}
	s.fwd = newForwarder(ups, log)
	return s, nil
}

// hostUpstreams are servers on port 53, less listen (no loop to
// ourselves).
func hostUpstreams(servers []string, listen string) []string {
	lh, lp, _ := net.SplitHostPort(listen)
	la, lerr := netip.ParseAddr(lh)
	var ups []string
	for _, srv := range servers {
		a, err := netip.ParseAddr(srv)
		if err != nil {
			continue
		}
		if lerr == nil && lp == "53" && a.WithZone("") == la.WithZone("") {
			continue
		}
		ups = append(ups, net.JoinHostPort(srv, "53"))
	}
	return ups
}

// Addr is the address served, once Run listens ("" before).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Ready is closed once Run listens and the informers have synced.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run listens on UDP and TCP, waits for the informers to sync (answering
// SERVFAIL for the cluster's names until then) and serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	pc, l, err := listen(s.opts.Listen)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.ctx = ctx
	s.mu.Lock()
	s.addr = l.Addr().String()
	s.mu.Unlock()
	tcp := &mdns.Server{Listener: l, Handler: s}
	errc := make(chan error, 2)
	go func() { errc <- s.serveUDP(pc) }()
	go func() { errc <- tcp.ActivateAndServe() }()
	s.log.Info("cluster DNS listening", "addr", s.Addr(), "zone", s.zone, "upstreams", s.fwd.upstreams)
	go func() {
		if !reconcile.WaitForCacheSync(ctx, s.synced...) {
			return
		}
		s.isSynced.Store(true)
		close(s.ready)
		s.log.Info("cluster DNS ready")
	}()
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errc:
		err = fmt.Errorf("serving DNS: %w", err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	tcp.ShutdownContext(sctx)
	pc.Close()
	l.Close()
	return err
}

// listen opens UDP and TCP on the same address; for port 0, on the same
// free port.
func listen(addr string) (*net.UDPConn, net.Listener, error) {
	var lastErr error
	for range 10 {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, err
		}
		host, _, _ := net.SplitHostPort(addr)
		_, port, _ := net.SplitHostPort(pc.LocalAddr().String())
		l, err := net.Listen("tcp", net.JoinHostPort(host, port))
		if err == nil {
			return pc.(*net.UDPConn), l, nil
		}
		pc.Close()
		lastErr = err
		if _, p, _ := net.SplitHostPort(addr); p != "0" {
			break
		}
	}
	return nil, nil, lastErr
}

// ServeDNS answers one query over TCP (UDP is served by serveUDP).
func (s *Server) ServeDNS(w mdns.ResponseWriter, r *mdns.Msg) {
	m, _ := s.answer(r, true)
	if err := w.WriteMsg(m); err != nil {
		s.log.Debug("writing a DNS answer", "err", err, "query", fmt.Sprint(r.Question))
	}
}

// answer is the reply to r fitted to the client's buffer; fromIndex as
// for reply. It never panics: a failure is SERVFAIL.
func (s *Server) answer(r *mdns.Msg, tcp bool) (m *mdns.Msg, fromIndex bool) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic answering a DNS query", "panic", p, "query", fmt.Sprint(r.Question))
			m = new(mdns.Msg)
			m.SetRcode(r, mdns.RcodeServerFailure)
			m.Answer, m.Ns, m.Extra = nil, nil, nil
			fromIndex = false
		}
	}()
	m, fromIndex = s.reply(s.ctx, r, tcp)
	fit(r, m, tcp)
	return m, fromIndex
}

// reply is the answer to r, received over TCP or UDP, before it is fitted
// to the client's buffer. fromIndex says it was made from the index
// alone, so that it holds until the index changes.
func (s *Server) reply(ctx context.Context, r *mdns.Msg, tcp bool) (m *mdns.Msg, fromIndex bool) {
	ctx, cancel := context.WithTimeout(ctx, 3*upstreamTimeout)
	defer cancel()
	m = new(mdns.Msg)
	switch {
	case r.Opcode != mdns.OpcodeQuery:
		m.SetRcode(r, mdns.RcodeNotImplemented)
		return m, false
	case len(r.Question) != 1:
		m.SetRcodeFormatError(r)
		return m, false
	}
	if opt := r.IsEdns0(); opt != nil && opt.Version() != 0 {
		m.SetRcode(r, mdns.RcodeBadVers)
		return m, false
	}
	q := r.Question[0]
	if q.Qclass != mdns.ClassINET {
		m.SetRcode(r, mdns.RcodeRefused)
		return m, false
	}
	name := strings.ToLower(q.Name)
	switch {
	case s.inZone(name):
		if !s.isSynced.Load() {
			m.SetRcode(r, mdns.RcodeServerFailure)
			return m, false
		}
		z := s.answerZone(ctx, q)
		m.SetRcode(r, z.rcode)
		m.Authoritative = z.rcode != mdns.RcodeRefused
		m.Truncated = z.truncated
		m.Answer, m.Extra = z.answer, z.extra
		if z.rcode != mdns.RcodeRefused && len(z.answer) == 0 {
			m.Ns = []mdns.RR{s.soa()} // NXDOMAIN or NODATA
		}
		return m, !z.forwarded
	case isReverse(name):
		if !s.isSynced.Load() {
			m.SetRcode(r, mdns.RcodeServerFailure)
			return m, false
		}
		if q.Qtype == mdns.TypePTR {
			if ip, ok := reverseAddr(name); ok {
				if names := s.ptr(ip); len(names) > 0 {
					m.SetReply(r)
					m.Authoritative = true
					for _, n := range names {
						m.Answer = append(m.Answer, &mdns.PTR{Hdr: hdr(q.Name, mdns.TypePTR, ttl), Ptr: n})
					}
					return m, true
				}
			}
		}
		// Not the cluster's: through to the upstreams (CoreDNS's
		// fallthrough in-addr.arpa ip6.arpa).
	}
	return s.forward(ctx, r, tcp), false
}

// forward is the upstreams' answer to r.
func (s *Server) forward(ctx context.Context, r *mdns.Msg, tcp bool) *mdns.Msg {
	opt := r.IsEdns0()
	do := opt != nil && opt.Do()
	m := new(mdns.Msg)
	up, err := s.fwd.resolve(ctx, r.Question[0], do, tcp)
	if err != nil {
		s.log.Debug("forwarding a DNS query", "name", r.Question[0].Name, "err", err)
		m.SetRcode(r, mdns.RcodeServerFailure)
		return m
	}
	m.SetRcode(r, up.Rcode)
	m.Authoritative = up.Authoritative
	m.RecursionAvailable = up.RecursionAvailable
	m.AuthenticatedData = up.AuthenticatedData
	m.Answer, m.Ns, m.Extra = up.Answer, up.Ns, withoutOPT(up.Extra)
	return m
}

func (s *Server) inZone(name string) bool {
	return name == s.zone || strings.HasSuffix(name, "."+s.zone)
}

func isReverse(name string) bool {
	for _, z := range []string{"in-addr.arpa.", "ip6.arpa."} {
		if name == z || strings.HasSuffix(name, "."+z) {
			return true
		}
	}
	return false
}

// fit makes m, the answer to r, fit the client's buffer: over UDP its
// EDNS0 size (512 bytes without EDNS0), records left out and the TC bit
// set when they do not fit, so that the client asks again over TCP. An
// EDNS0 query gets an OPT record back.
func fit(r, m *mdns.Msg, tcp bool) {
	size := mdns.MinMsgSize
	if opt := r.IsEdns0(); opt != nil {
		size = max(int(opt.UDPSize()), mdns.MinMsgSize)
		reply := &mdns.OPT{Hdr: mdns.RR_Header{Name: ".", Rrtype: mdns.TypeOPT}}
		reply.SetUDPSize(uint16(min(size, 4096)))
		reply.SetDo(opt.Do())
		m.Extra = append(m.Extra, reply)
	} else if m.Rcode > 0xF {
		m.Rcode = mdns.RcodeServerFailure // an extended code needs OPT
	}
	if tcp {
		size = mdns.MaxMsgSize
	}
	m.Truncate(size)
}
