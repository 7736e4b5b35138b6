package replicaset

import (
	"sync"
	"time"
)

// ExpectationsTimeout is how long a workload waits for the informer to show
// the creates and deletes it asked for before it manages replicas again
// anyway (a watch event may have been lost), as upstream.
const ExpectationsTimeout = 5 * time.Minute

// expectations records, per workload key, how many pod creations and which
// pod deletions the loop has asked for and not yet seen in the informer.
// While any are outstanding the workload's replicas are not managed again,
// so a burst of events cannot make the loop create or delete twice. It is
// upstream's UIDTrackingControllerExpectations.
type expectations struct {
	mu  sync.Mutex
	now func() time.Time
	ttl time.Duration
	m   map[string]*expectation
}

type expectation struct {
	add, del  int
	timestamp time.Time
	// deleting holds the "namespace/name" of each pod whose deletion is
	// expected: its delete is counted once, whether seen as a
	// deletionTimestamp or as a removal.
	deleting map[string]bool
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, ttl: ExpectationsTimeout, m: map[string]*expectation{}}
}

// satisfied reports whether the workload may manage its replicas: nothing
// is expected, everything expected was seen, or the expectations expired.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok {
		return true
	}
	if x.add <= 0 && x.del <= 0 {
		return true
	}
	return e.now().Sub(x.timestamp) > e.ttl
}

// expectCreations replaces the workload's expectations with n creations.
func (e *expectations) expectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{add: n, timestamp: e.now()}
}

// expectDeletions replaces the workload's expectations with the deletion of
// the named pods.
func (e *expectations) expectDeletions(key string, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{del: len(podKeys), timestamp: e.now(), deleting: map[string]bool{}}
	for _, k := range podKeys {
		x.deleting[k] = true
	}
	e.m[key] = x
}

// creationObserved counts one expected creation as seen (or as never to be
// seen, after a failed create).
func (e *expectations) creationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.add--
	}
}

// deletionObserved counts the deletion of podKey, if it was expected.
func (e *expectations) deletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok && x.deleting[podKey] {
		delete(x.deleting, podKey)
		x.del--
	}
}

// forget drops the workload's expectations (it was deleted).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
