package apiserver

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"plainkube.dev/plainkube/internal/apiserver/priority"
)

// seats is API Priority and Fairness's seat keeping: every request other
// than a watch (which holds a seat until its initial events are sent) and
// a stream is classified by the FlowSchemas into a priority level and a
// flow (package priority), and takes one of its level's seats while it is
// served. Exempt levels have no limit. A request past its level's seats,
// or past its flow's share (half the level's seats: one client's slow
// requests never take a level whole), waits in its flow's queue (at most
// the level's queueLengthLimit, for at most maxQueueWait or its deadline)
// unless the level rejects; freed seats go to the waiting flows in turn,
// so one flow's flood cannot starve another. A request that finds its
// queue full, a rejecting level full, or waits too long, is refused with
// 429 and Retry-After (clients retry).
//
// Unlike upstream, a level does not lend its idle seats to another, and
// a flow has a queue of its own rather than a shuffle-sharded hand of a
// level's queues.
type seats struct {
	mu          sync.Mutex
	serverSeats int
	config      atomic.Pointer[priority.Config]
	levels      map[string]*levelSeats
}

// maxQueueWait bounds a request's wait for a seat: a quarter of the
// request timeout, as upstream's.
const maxQueueWait = maxRequestTimeout / 4

// levelSeats are one priority level's seats and queues.
type levelSeats struct {
	level  *priority.Level
	inUse  int
	byFlow map[string]int
	queues map[string][]*waiter
	// turn lists the flows with requests waiting, the next to be served
	// first.
	turn []string
}

// waiter is a request waiting for a seat; granted is closed when it has
// one.
type waiter struct {
	granted chan struct{}
	seated  bool
}

// newSeats shares serverSeats (upstream's --max-requests-inflight plus
// --max-mutating-requests-inflight) among upstream's bootstrap
// configuration until setConfig gives the stored one.
func newSeats(serverSeats int) *seats {
	s := &seats{serverSeats: serverSeats}
	s.setConfig(priority.Bootstrap(serverSeats))
	return s
}

// setConfig classifies from now on by c. Levels that stay keep their
// requests in flight and their queues.
func (s *seats) setConfig(c *priority.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	levels := map[string]*levelSeats{}
	for name, lv := range c.Levels() {
		ls := s.levels[name]
		if ls == nil {
			ls = &levelSeats{byFlow: map[string]int{}, queues: map[string][]*waiter{}}
		}
		ls.level = lv
		levels[name] = ls
		ls.dispatch()
	}
	s.levels = levels
	s.config.Store(c)
}

// SetFlowControl makes the server classify requests by these stored API
// Priority and Fairness objects from now on (until then it classifies by
// upstream's bootstrap configuration).
func (s *Server) SetFlowControl(schemas []*flowcontrolv1.FlowSchema, levels []*flowcontrolv1.PriorityLevelConfiguration) {
	s.seats.setConfig(priority.New(schemas, levels, s.seats.serverSeats))
}

// seatMetrics reports each priority level's seats
// (apiserver_flowcontrol_nominal_limit_seats, upstream's; 0 for exempt
// levels).
type seatMetrics struct {
	s       *seats
	nominal *prometheus.Desc
}

func newSeatMetrics(s *seats) seatMetrics {
	return seatMetrics{s: s, nominal: prometheus.NewDesc("apiserver_flowcontrol_nominal_limit_seats",
		"Nominal number of execution seats configured for each priority level", []string{"priority_level"}, nil)}
}

func (m seatMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.nominal }

func (m seatMetrics) Collect(ch chan<- prometheus.Metric) {
	if m.s == nil {
		return
	}
	for name, lv := range m.s.config.Load().Levels() {
		ch <- prometheus.MustNewConstMetric(m.nominal, prometheus.GaugeValue, float64(lv.Seats), name)
	}
}

// classify is r's schema, level and flow; ok is false when no schema
// matches (the request is not limited).
func (s *seats) classify(r priority.Request) (m priority.Match, ok bool) {
	return s.config.Load().Classify(r)
}

// setMatchHeaders tells the client how its request was classified, in
// upstream's headers.
func setMatchHeaders(h interface{ Set(k, v string) }, m priority.Match) {
	h.Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, string(m.Schema.UID))
	h.Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, string(m.Level.UID))
}

// queueGauge counts the requests waiting in the queues
// (apiserver_current_inqueue_requests).
type queueGauge interface {
	Inc()
	Dec()
}

// acquire takes a seat for a request classified m, waiting for one until
// ctx ends or maxQueueWait passes; release gives it back. false: no seat
// (answer 429). While it waits the request counts in queued (if not nil);
// the time it waited is added to waited (if not nil).
func (s *seats) acquire(ctx context.Context, m priority.Match, queued queueGauge, waited *time.Duration) (release func(), ok bool) {
	if m.Level == nil || m.Level.Exempt {
		return func() {}, true
	}
	s.mu.Lock()
	lv := s.levels[m.Level.Name]
	if lv == nil { // a level of a configuration replaced since
		s.mu.Unlock()
		return func() {}, true
	}
	flow := m.Flow
	release = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		lv.inUse--
		if lv.byFlow[flow]--; lv.byFlow[flow] <= 0 {
			delete(lv.byFlow, flow)
		}
		lv.dispatch()
	}
	if len(lv.turn) == 0 && lv.free(flow) {
		lv.seat(flow)
		s.mu.Unlock()
		return release, true
	}
	if lv.level.Reject || len(lv.queues[flow]) >= lv.level.QueueLength {
		s.mu.Unlock()
		return nil, false
	}
	w := &waiter{granted: make(chan struct{})}
	if len(lv.queues[flow]) == 0 {
		lv.turn = append(lv.turn, flow)
	}
	lv.queues[flow] = append(lv.queues[flow], w)
	lv.dispatch()
	s.mu.Unlock()

	if queued != nil {
		queued.Inc()
		defer queued.Dec()
	}
	if waited != nil {
		defer func(start time.Time) { *waited += time.Since(start) }(time.Now())
	}
	timer := time.NewTimer(maxQueueWait)
	defer timer.Stop()
	select {
	case <-w.granted:
		return release, true
	case <-ctx.Done():
	case <-timer.C:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.seated { // granted as the wait ended
		return release, true
	}
	lv.leave(flow, w)
	return nil, false
}

// free reports whether flow may take a seat now: the level has one, and
// the flow holds less than half of them.
func (lv *levelSeats) free(flow string) bool {
	return lv.inUse < lv.level.Seats && lv.byFlow[flow] < max(lv.level.Seats/2, 1)
}

func (lv *levelSeats) seat(flow string) {
	lv.inUse++
	lv.byFlow[flow]++
}

// dispatch gives free seats to waiting requests, one per flow in turn.
func (lv *levelSeats) dispatch() {
	for lv.inUse < lv.level.Seats {
		i := slices.IndexFunc(lv.turn, lv.free)
		if i < 0 {
			return // nobody waiting, or only flows at their share
		}
		flow := lv.turn[i]
		q := lv.queues[flow]
		w := q[0]
		lv.queues[flow] = q[1:]
		lv.turn = slices.Delete(lv.turn, i, i+1)
		if len(lv.queues[flow]) > 0 {
			lv.turn = append(lv.turn, flow) // back of the line
		} else {
			delete(lv.queues, flow)
		}
		lv.seat(flow)
		w.seated = true
		close(w.granted)
	}
}

// leave takes w, which gave up waiting, out of flow's queue.
func (lv *levelSeats) leave(flow string, w *waiter) {
	q := slices.DeleteFunc(lv.queues[flow], func(x *waiter) bool { return x == w })
	if len(q) > 0 {
		lv.queues[flow] = q
		return
	}
	delete(lv.queues, flow)
	lv.turn = slices.DeleteFunc(lv.turn, func(x string) bool { return x == flow })
}
