package dns

import (
	"errors"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"

	mdns "github.com/miekg/dns"
)

// Serving UDP. Nearly every query a cluster asks is one it asked a moment
// ago (each pod's resolver tries the same search-path names again and
// again), and an answer from the index holds until the index changes. So
// the readers keep the packed answers of such queries by the query's
// bytes after its ID, for the index generation they were made at, and
// answer a repeated query by copying them with the new ID: no unpacking,
// no lookup, no packing and no allocation. Other queries are answered
// each in its own goroutine (a forwarded one may wait on the upstreams).

const (
	headerLen = 12
	// maxCachedAnswers bounds the answer cache; past it, it starts
	// again empty.
	maxCachedAnswers = 10000
)

// serveUDP answers the queries read from pc until pc is closed, with one
// reader per CPU.
func (s *Server) serveUDP(pc *net.UDPConn) error {
	readers := max(runtime.GOMAXPROCS(0), 2)
	errc := make(chan error, readers)
	for range readers {
		go func() { errc <- s.readUDP(pc) }()
	}
	var err error
	for range readers {
		err = errors.Join(err, <-errc)
	}
	return err
}

// readUDP is one reader of serveUDP.
func (s *Server) readUDP(pc *net.UDPConn) error {
	buf := make([]byte, mdns.MaxMsgSize)
	var out []byte
	for {
		n, from, err := pc.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil || n < headerLen || buf[2]&0x80 != 0 {
			continue // an error of one datagram, no header, or a response
		}
		query := buf[:n]
		if cached := s.answers.get(s.idx.generation.Load(), query); cached != nil {
			out = append(out[:0], cached...)
			out[0], out[1] = query[0], query[1]
			s.writeUDP(pc, out, from)
			continue
		}
		go s.answerUDP(pc, slices.Clone(query), from)
	}
}

// answerUDP answers query, keeping the answer when it came from the index.
func (s *Server) answerUDP(pc *net.UDPConn, query []byte, from netip.AddrPort) {
	generation := s.idx.generation.Load()
	r := new(mdns.Msg)
	if err := r.Unpack(query); err != nil {
		s.writeUDP(pc, formatError(query), from)
		return
	}
	m, fromIndex := s.answer(r, false)
	out, err := m.Pack()
	if err != nil {
		s.log.Debug("packing a DNS answer", "err", err, "query", r.Question)
		return
	}
	if fromIndex {
		s.answers.put(generation, query, out)
	}
	s.writeUDP(pc, out, from)
}

func (s *Server) writeUDP(pc *net.UDPConn, b []byte, to netip.AddrPort) {
	if _, err := pc.WriteToUDPAddrPort(b, to); err != nil {
		s.log.Debug("writing a DNS answer", "err", err, "to", to)
	}
}

// formatError is the FORMERR answer to a query that cannot be unpacked:
// its header with no records.
func formatError(query []byte) []byte {
	out := make([]byte, headerLen)
	copy(out, query[:4])
	out[2] = 0x80 | query[2]&0x79 // QR, the query's opcode and RD
	out[3] = mdns.RcodeFormatError
	return out
}

// answerCache holds packed answers by the query's bytes after its ID,
// all made at one index generation.
type answerCache struct {
	mu         sync.RWMutex
	generation uint64
	answers    map[string][]byte
}

// get is the answer to query at generation, nil if none is kept.
func (c *answerCache) get(generation uint64, query []byte) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.generation != generation {
		return nil
	}
	return c.answers[string(query[2:])]
}

// put keeps answer, the answer to query made at generation, unless the
// cache already holds a later generation's.
func (c *answerCache) put(generation uint64, query, answer []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case generation < c.generation:
		return
	case generation > c.generation || len(c.answers) >= maxCachedAnswers || c.answers == nil:
		c.generation, c.answers = generation, map[string][]byte{}
	}
	c.answers[string(query[2:])] = answer
}
