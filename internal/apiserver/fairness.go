package apiserver

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"plainkube.dev/plainkube/internal/auth"
)

// seatLevel is the priority level a request is served at: a fixed form of upstream's
// default API Priority and Fairness configuration (its FlowSchemas and
// PriorityLevelConfigurations are served and stored, not read).
type seatLevel int

const (
	// exempt: system:masters — the admin and the server's own loopback
	// (upstream's exempt level): never limited.
	exempt seatLevel = iota
	// system: the nodes and the control plane's components (upstream's
	// node-high, system and leader-election levels): seats of their own,
	// which no other client can take.
	system
	// workload: every other client (upstream's workload-low and
	// global-default), each user at most half the level's seats, so that
	// one flooding client leaves room for the others.
	workload
)

// seatLevelOf classifies the request's user.
func seatLevelOf(u *auth.User) seatLevel {
	switch {
	case u.InGroup(auth.GroupMasters):
		return exempt
	case u.InGroup(auth.GroupNodes), u.Name == auth.UserKubeControllerManager, u.Name == auth.UserKubeScheduler,
		strings.HasPrefix(u.Name, "system:serviceaccount:kube-system:"):
		return system
	}
	return workload
}

// seats counts the requests in flight, other than watches and streams, per
// level and per user of the workload level. A request past its level's
// seats, or a workload user's share, waits in its user's queue (at most
// queueLength requests each, for at most maxQueueWait or its deadline);
// freed seats go to the queues in turn, a request of each user with one
// waiting, so one user's flood cannot starve another. A request that
// finds its user's queue full, or waits too long, is refused with 429
// and Retry-After (clients retry).
type seats struct {
	mu               sync.Mutex
	system, workload *levelSeats
}

const (
	// queueLength bounds the requests of one user waiting for a seat.
	queueLength = 50
	// maxQueueWait bounds a request's wait for a seat: a quarter of the
	// request timeout, as upstream's.
	maxQueueWait = maxRequestTimeout / 4
)

// levelSeats are one priority level's seats and queues.
type levelSeats struct {
	inUse, max int
	perUserMax int // 0: no share per user
	byUser     map[string]int
	queues     map[string][]*waiter
	// turn lists the users with requests waiting, the next to be served
	// first.
	turn []string
}

// waiter is a request waiting for a seat; granted is closed when it has
// one.
type waiter struct {
	granted chan struct{}
	seated  bool
}

// newSeats gives the workload level limit seats (upstream's
// --max-requests-inflight), the system level as many of its own (the
// controllers and simulated nodes of a big cluster are its busiest
// clients), and a workload user half the workload level's.
func newSeats(limit int) *seats {
	level := func(perUser int) *levelSeats {
		return &levelSeats{max: limit, perUserMax: perUser, byUser: map[string]int{}, queues: map[string][]*waiter{}}
	}
	return &seats{system: level(0), workload: level(max(limit/2, 1))}
}

// queueGauge counts the requests waiting in the queues
// (apiserver_current_inqueue_requests).
type queueGauge interface {
	Inc()
	Dec()
}

// acquire takes a seat for u's request, waiting for one until ctx ends or
// maxQueueWait passes; release gives it back. false: no seat (answer 429).
// While it waits the request counts in queued (if not nil); the time it
// waited is added to waited (if not nil).
func (s *seats) acquire(ctx context.Context, u *auth.User, queued queueGauge, waited *time.Duration) (release func(), ok bool) {
	var lv *levelSeats
	switch seatLevelOf(u) {
	case exempt:
		return func() {}, true
	case system:
		lv = s.system
	default:
		lv = s.workload
	}
	release = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		lv.inUse--
		if lv.byUser[u.Name]--; lv.byUser[u.Name] <= 0 {
			delete(lv.byUser, u.Name)
		}
		lv.dispatch()
	}
	s.mu.Lock()
	if len(lv.turn) == 0 && lv.free(u.Name) {
		lv.seat(u.Name)
		s.mu.Unlock()
		return release, true
	}
	if len(lv.queues[u.Name]) >= queueLength {
		s.mu.Unlock()
		return nil, false
	}
	w := &waiter{granted: make(chan struct{})}
	if len(lv.queues[u.Name]) == 0 {
		lv.turn = append(lv.turn, u.Name)
	}
	lv.queues[u.Name] = append(lv.queues[u.Name], w)
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
	lv.leave(u.Name, w)
	return nil, false
}

// free reports whether user may take a seat now.
func (lv *levelSeats) free(user string) bool {
	return lv.inUse < lv.max && (lv.perUserMax == 0 || lv.byUser[user] < lv.perUserMax)
}

func (lv *levelSeats) seat(user string) {
	lv.inUse++
	lv.byUser[user]++
}

// dispatch gives free seats to waiting requests, one per user in turn.
func (lv *levelSeats) dispatch() {
	for lv.inUse < lv.max {
		i := slices.IndexFunc(lv.turn, lv.free)
		if i < 0 {
			return // nobody waiting, or only users at their share
		}
		user := lv.turn[i]
		q := lv.queues[user]
		w := q[0]
		lv.queues[user] = q[1:]
		lv.turn = slices.Delete(lv.turn, i, i+1)
		if len(lv.queues[user]) > 0 {
			lv.turn = append(lv.turn, user) // back of the line
		} else {
			delete(lv.queues, user)
		}
		lv.seat(user)
		w.seated = true
		close(w.granted)
	}
}

// leave takes w, which gave up waiting, out of user's queue.
func (lv *levelSeats) leave(user string, w *waiter) {
	q := slices.DeleteFunc(lv.queues[user], func(x *waiter) bool { return x == w })
	if len(q) > 0 {
		lv.queues[user] = q
		return
	}
	delete(lv.queues, user)
	lv.turn = slices.DeleteFunc(lv.turn, func(x string) bool { return x == user })
}
