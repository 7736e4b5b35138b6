package apiserver

import (
	"strings"
	"sync"

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
// seats, or a workload user's share, is refused with 429 and Retry-After
// (clients retry), instead of queueing as upstream does.
type seats struct {
	mu                     sync.Mutex
	system, workload       int
	systemMax, workloadMax int
	perUserMax             int
	byUser                 map[string]int
}

// newSeats gives the workload level limit seats (upstream's
// --max-requests-inflight), the system level as many of its own (the
// controllers and simulated nodes of a big cluster are its busiest
// clients), and a workload user half the workload level's.
func newSeats(limit int) *seats {
	return &seats{systemMax: limit, workloadMax: limit, perUserMax: max(limit/2, 1), byUser: map[string]int{}}
}

// acquire takes a seat for u's request; release gives it back. false: no
// seat (answer 429).
func (s *seats) acquire(u *auth.User) (release func(), ok bool) {
	p := seatLevelOf(u)
	if p == exempt {
		return func() {}, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == system {
		if s.system >= s.systemMax {
			return nil, false
		}
		s.system++
		return func() { s.mu.Lock(); s.system--; s.mu.Unlock() }, true
	}
	if s.workload >= s.workloadMax || s.byUser[u.Name] >= s.perUserMax {
		return nil, false
	}
	s.workload++
	s.byUser[u.Name]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.workload--
		if s.byUser[u.Name]--; s.byUser[u.Name] == 0 {
			delete(s.byUser, u.Name)
		}
	}, true
}
