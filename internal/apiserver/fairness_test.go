package apiserver

import (
	"context"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/apiserver/priority"
	"plainkube.dev/plainkube/internal/auth"
)

// queueLength is testSeats's queueLengthLimit.
const queueLength = 50

// testSeats are n seats of one queuing level, "workload", whose schema
// takes every request, one flow per user.
func testSeats(n int) *seats {
	s := &seats{serverSeats: n}
	s.setConfig(priority.New([]*flowcontrolv1.FlowSchema{{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Spec: flowcontrolv1.FlowSchemaSpec{
		MatchingPrecedence: 1, PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload"},
		DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
		Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "*"}}},
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}}}}}},
		[]*flowcontrolv1.PriorityLevelConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "workload"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{QueueLengthLimit: queueLength}}}}}}, n))
	return s
}

// acquireAs is s.acquire for a request of u.
func (s *seats) acquireAs(ctx context.Context, u *auth.User, queued queueGauge, waited *time.Duration) (func(), bool) {
	m, _ := s.classify(priority.Request{User: u.Name, Groups: u.Groups, Verb: "get", Path: "/version"})
	return s.acquire(ctx, m, queued, waited)
}

// TestSeatsQueueFairly: past the level's seats, requests wait in their
// flow's queue and freed seats go to the flows in turn, never past a
// flow's share; a full queue or a wait that ends is refused.
func TestSeatsQueueFairly(t *testing.T) {
	s := testSeats(4) // 4 seats, 2 per user
	a, b, c := &auth.User{Name: "a"}, &auth.User{Name: "b"}, &auth.User{Name: "c"}
	ctx := context.Background()
	take := func(u *auth.User) func() {
		t.Helper()
		release, ok := s.acquireAs(ctx, u, nil, nil)
		if !ok {
			t.Fatalf("%s: no seat", u.Name)
		}
		return release
	}
	releaseA1, _ := take(a), take(a)
	releaseC1, releaseC2 := take(c), take(c)

	granted := make(chan string, 3)
	queued := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			s.mu.Lock()
			got := 0
			for _, q := range s.levels["workload"].queues {
				got += len(q)
			}
			s.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d requests waiting, want %d", got, n)
			}
		}
	}
	for i, w := range []struct {
		u    *auth.User
		name string
	}{{a, "a3"}, {b, "b1"}, {b, "b2"}} {
		go func() {
			if _, ok := s.acquireAs(ctx, w.u, nil, nil); ok {
				granted <- w.name
			} else {
				granted <- w.name + " refused"
			}
		}()
		queued(i + 1)
	}
	next := func(want string) {
		t.Helper()
		select {
		case got := <-granted:
			if got != want {
				t.Fatalf("granted %s, want %s", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("nothing granted, want %s", want)
		}
	}
	// a is at its share: the freed seats go to b, then back to a.
	releaseC1()
	next("b1")
	releaseC2()
	next("b2")
	releaseA1()
	next("a3")

	// A wait that ends is refused and leaves the queue; while it waited it
	// counted as queued, and its wait is the SLI's to leave out.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	var g countingGauge
	var waited time.Duration
	if _, ok := s.acquireAs(short, a, &g, &waited); ok {
		t.Fatal("a request that could not wait for a seat got one")
	}
	if g.n != 0 || g.max != 1 || waited < 50*time.Millisecond {
		t.Errorf("queued gauge %d (at most %d), waited %v; want 0 (1), at least 50ms", g.n, g.max, waited)
	}
	s.mu.Lock()
	left := len(s.levels["workload"].queues) + len(s.levels["workload"].turn)
	s.mu.Unlock()
	if left != 0 {
		t.Errorf("%d queues left after the wait ended", left)
	}

	// A full queue refuses at once.
	long, cancelLong := context.WithCancel(ctx)
	defer cancelLong()
	for range queueLength {
		go s.acquireAs(long, a, nil, nil)
	}
	queued(queueLength)
	start := time.Now()
	if _, ok := s.acquireAs(ctx, a, nil, nil); ok || time.Since(start) > time.Second {
		t.Errorf("past a full queue: seated %v after %v", ok, time.Since(start))
	}
}

// countingGauge is a queueGauge that remembers its highest value.
type countingGauge struct{ n, max int }

func (g *countingGauge) Inc() { g.n++; g.max = max(g.max, g.n) }
func (g *countingGauge) Dec() { g.n-- }
