package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
)

// Names outside the cluster are forwarded to the upstream resolvers, as
// CoreDNS's `forward . /etc/resolv.conf` with `cache 30` in front.

const (
	// upstreamTimeout bounds one exchange with one upstream.
	upstreamTimeout = 2 * time.Second
	// upstreamUDPSize is the EDNS0 buffer size asked of upstreams (the
	// DNS flag day 2020 value).
	upstreamUDPSize = 1232
	// cacheMaxTTL caps how long an answer is cached, positive or not.
	cacheMaxTTL = 30 * time.Second
	// cacheSize bounds the number of cached answers.
	cacheSize = 10000
)

var errNoUpstreams = errors.New("no upstream resolvers")

// forwarder asks the upstream resolvers in turn, caching their answers.
type forwarder struct {
	upstreams []string
	timeout   time.Duration
	udp, tcp  *mdns.Client
	cache     *msgCache
	log       *slog.Logger
}

func newForwarder(upstreams []string, log *slog.Logger) *forwarder {
	return &forwarder{
		upstreams: upstreams,
		timeout:   upstreamTimeout,
		udp:       &mdns.Client{Net: "udp", UDPSize: upstreamUDPSize},
		tcp:       &mdns.Client{Net: "tcp"},
		cache:     newMsgCache(cacheSize, cacheMaxTTL),
		log:       log,
	}
}

// resolve answers q from the cache or the upstreams. do asks for DNSSEC
// records; tcp asks the upstreams over TCP from the start. The message
// returned is the caller's to change.
func (f *forwarder) resolve(ctx context.Context, q mdns.Question, do, tcp bool) (*mdns.Msg, error) {
	key := cacheKey{name: strings.ToLower(q.Name), qtype: q.Qtype, qclass: q.Qclass, do: do}
	if m := f.cache.get(key); m != nil {
		return m, nil
	}
	m, err := f.exchange(ctx, q, do, tcp)
	if err != nil {
		return nil, err
	}
	f.cache.put(key, m)
	return m, nil
}

// lookup resolves name (for an ExternalName target).
func (f *forwarder) lookup(ctx context.Context, name string, qtype uint16) (*mdns.Msg, error) {
	return f.resolve(ctx, mdns.Question{Name: name, Qtype: qtype, Qclass: mdns.ClassINET}, false, false)
}

// exchange asks each upstream in turn until one answers. A failure to
// answer (network error, time out, SERVFAIL or REFUSED) moves on to the
// next one.
func (f *forwarder) exchange(ctx context.Context, q mdns.Question, do, tcp bool) (*mdns.Msg, error) {
	if len(f.upstreams) == 0 {
		return nil, errNoUpstreams
	}
	req := new(mdns.Msg)
	req.Id = mdns.Id()
	req.RecursionDesired = true
	req.Question = []mdns.Question{q}
	req.SetEdns0(upstreamUDPSize, do)
	var errs []error
	for _, up := range f.upstreams {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		m, err := f.exchangeOne(ctx, up, req, tcp)
		if err == nil {
			return m, nil
		}
		f.log.Debug("upstream resolver failed", "upstream", up, "name", q.Name, "type", mdns.TypeToString[q.Qtype], "err", err)
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func (f *forwarder) exchangeOne(ctx context.Context, up string, req *mdns.Msg, tcp bool) (*mdns.Msg, error) {
	ask := func(c *mdns.Client) (*mdns.Msg, error) {
		ctx, cancel := context.WithTimeout(ctx, f.timeout)
		defer cancel()
		m, _, err := c.ExchangeContext(ctx, req, up)
		return m, err
	}
	var m *mdns.Msg
	var err error
	if !tcp {
		m, err = ask(f.udp)
	}
	if tcp || (err == nil && m.Truncated) {
		// Over TCP when the client asked over TCP, or when the answer
		// over UDP did not fit.
		m, err = ask(f.tcp)
	}
	if err != nil {
		return nil, err
	}
	q := req.Question[0]
	if len(m.Question) != 1 || !strings.EqualFold(m.Question[0].Name, q.Name) || m.Question[0].Qtype != q.Qtype || m.Question[0].Qclass != q.Qclass {
		return nil, fmt.Errorf("%s answered another question", up)
	}
	if m.Rcode == mdns.RcodeServerFailure || m.Rcode == mdns.RcodeRefused {
		return nil, fmt.Errorf("%s answered %s", up, mdns.RcodeToString[m.Rcode])
	}
	return m, nil
}

// msgCache holds upstream answers for as long as their TTLs say, at most
// maxTTL: positive answers by their records' smallest TTL, negative ones
// (NXDOMAIN, NODATA) by their SOA's minimum (RFC 2308). Answers without
// a TTL to go by, truncated ones and failures are not kept. When full,
// an arbitrary entry makes room.
type msgCache struct {
	mu      sync.Mutex
	max     int
	maxTTL  time.Duration
	now     func() time.Time
	entries map[cacheKey]cacheEntry
}

type cacheKey struct {
	name          string
	qtype, qclass uint16
	do            bool
}

type cacheEntry struct {
	msg             *mdns.Msg
	stored, expires time.Time
}

func newMsgCache(max int, maxTTL time.Duration) *msgCache {
	return &msgCache{max: max, maxTTL: maxTTL, now: time.Now, entries: map[cacheKey]cacheEntry{}}
}

// get is a copy of the answer to k, its TTLs lowered by the time it has
// been cached; nil if none.
func (c *msgCache) get(k cacheKey) *mdns.Msg {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return nil
	}
	now := c.now()
	if !now.Before(e.expires) {
		delete(c.entries, k)
		return nil
	}
	m := e.msg.Copy()
	age := uint32(now.Sub(e.stored) / time.Second)
	for _, sec := range [][]mdns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			if h := rr.Header(); h.Ttl > age {
				h.Ttl -= age
			} else {
				h.Ttl = 0
			}
		}
	}
	return m
}

func (c *msgCache) put(k cacheKey, m *mdns.Msg) {
	ttl := c.ttl(m)
	if ttl <= 0 {
		return
	}
	m = m.Copy()
	m.Extra = withoutOPT(m.Extra)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.max {
		for old, e := range c.entries {
			delete(c.entries, old)
			if !now.Before(e.expires) {
				continue // an expired one made room; look for more
			}
			break
		}
	}
	c.entries[k] = cacheEntry{msg: m, stored: now, expires: now.Add(ttl)}
}

// ttl is how long m may be cached.
func (c *msgCache) ttl(m *mdns.Msg) time.Duration {
	if m.Truncated {
		return 0
	}
	var sec uint32
	switch {
	case m.Rcode == mdns.RcodeSuccess && len(m.Answer) > 0:
		sec = ^uint32(0)
		for _, s := range [][]mdns.RR{m.Answer, m.Ns, withoutOPT(m.Extra)} {
			for _, rr := range s {
				sec = min(sec, rr.Header().Ttl)
			}
		}
	case m.Rcode == mdns.RcodeSuccess || m.Rcode == mdns.RcodeNameError:
		for _, rr := range m.Ns {
			if soa, ok := rr.(*mdns.SOA); ok {
				sec = min(soa.Hdr.Ttl, soa.Minttl)
				break
			}
		}
	}
	return min(time.Duration(sec)*time.Second, c.maxTTL)
}

func withoutOPT(rrs []mdns.RR) []mdns.RR {
	var out []mdns.RR
	for _, rr := range rrs {
		if rr.Header().Rrtype != mdns.TypeOPT {
			out = append(out, rr)
		}
	}
	return out
}
