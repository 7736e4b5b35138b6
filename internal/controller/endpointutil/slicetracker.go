package endpointutil

import (
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletionExpected marks a slice this controller deleted.
const deletionExpected = -1

// deletionObserved marks a slice whose deletion was seen before the
// controller recorded writing it (someone deleted it the moment it was
// made, before the create's answer was back): the write is then not
// recorded, or a slice that will never be seen would keep its Service
// stale forever. A mark whose write never comes (a slice written before a
// restart) stays until the Service is forgotten: one per such slice.
const deletionObserved = -2

// SliceTracker remembers, per Service, the generation of each slice this
// controller last wrote (or that it deleted one), as upstream's
// EndpointSliceTracker. It tells a reconcile that the informer cache is
// behind the controller's own writes (a slice just created is missing, one
// just deleted is still there, one just updated shows an older generation),
// when acting on the cache would create duplicates; and it tells the event
// handlers which slice events are the controller's own echo.
type SliceTracker struct {
	mu   sync.Mutex
	gens map[types.NamespacedName]map[types.UID]int64
}

// NewSliceTracker is an empty tracker.
func NewSliceTracker() *SliceTracker {
	return &SliceTracker{gens: map[types.NamespacedName]map[types.UID]int64{}}
}

func serviceOf(s *discoveryv1.EndpointSlice) types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discoveryv1.LabelServiceName]}
}

// Written records a slice as returned by a create or update.
func (t *SliceTracker) Written(s *discoveryv1.EndpointSlice) {
	t.set(s, s.Generation)
}

// Deleted records that the controller deleted s.
func (t *SliceTracker) Deleted(s *discoveryv1.EndpointSlice) {
	t.set(s, deletionExpected)
}

func (t *SliceTracker) set(s *discoveryv1.EndpointSlice, gen int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	svc := serviceOf(s)
	if t.gens[svc] == nil {
		t.gens[svc] = map[types.UID]int64{}
	}
	if t.gens[svc][s.UID] == deletionObserved {
		t.forget(svc, s.UID)
		return
	}
	t.gens[svc][s.UID] = gen
}

func (t *SliceTracker) forget(svc types.NamespacedName, uid types.UID) {
	delete(t.gens[svc], uid)
	if len(t.gens[svc]) == 0 {
		delete(t.gens, svc)
	}
}

// StaleRecheck is how soon a Service whose cached slices are behind the
// controller's own writes (Stale) is looked at again. A fixed delay, not
// the queue's backoff: every intermediate generation the cache receives
// enqueues the Service and finds it still stale, and counted as failures
// those would grow the backoff to seconds while the cache is only
// milliseconds behind — and the write that catches it up enqueues nothing
// (ShouldSync), so the Service would wait out that backoff.
const StaleRecheck = 50 * time.Millisecond

// ShouldSync reports whether an observed slice differs from what the
// controller last wrote (someone else changed it, or it is unknown).
func (t *SliceTracker) ShouldSync(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.gens[serviceOf(s)][s.UID]
	return !ok || g != s.Generation
}

// HandleDeletion forgets a slice whose deletion was observed and reports
// whether the controller expected it (deleted it itself). A slice it did
// not know (written before a restart) was not expected either.
func (t *SliceTracker) HandleDeletion(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	svc := serviceOf(s)
	g, ok := t.gens[svc][s.UID]
	if !ok {
		// Unknown: written before a restart, or its write not recorded
		// yet (deletionObserved).
		if t.gens[svc] == nil {
			t.gens[svc] = map[types.UID]int64{}
		}
		t.gens[svc][s.UID] = deletionObserved
		return false
	}
	t.forget(svc, s.UID)
	return g == deletionExpected
}

// Stale reports whether the cached slices of a Service are behind the
// controller's own writes.
func (t *SliceTracker) Stale(svc types.NamespacedName, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gens, ok := t.gens[svc]
	if !ok {
		return false
	}
	seen := map[types.UID]bool{}
	for _, s := range cached {
		seen[s.UID] = true
		if g, ok := gens[s.UID]; ok && (g == deletionExpected || g > s.Generation) {
			return true
		}
	}
	for uid, g := range gens {
		if g != deletionExpected && g != deletionObserved && !seen[uid] {
			return true
		}
	}
	return false
}

// ForgetService drops everything known about a Service's slices.
func (t *SliceTracker) ForgetService(svc types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.gens, svc)
}
