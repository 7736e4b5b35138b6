package endpointslice

import (
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletionExpected marks a slice this controller deleted.
const deletionExpected = -1

// sliceTracker remembers, per Service, the generation of each slice this
// controller last wrote (or that it deleted one), as upstream's
// EndpointSliceTracker. It tells a reconcile that the informer cache is
// behind the controller's own writes (a slice just created is missing, one
// just deleted is still there, one just updated shows an older generation),
// when acting on the cache would create duplicates; and it tells the event
// handlers which slice events are the controller's own echo.
type sliceTracker struct {
	mu   sync.Mutex
	gens map[types.NamespacedName]map[types.UID]int64
}

func newSliceTracker() *sliceTracker {
	return &sliceTracker{gens: map[types.NamespacedName]map[types.UID]int64{}}
}

func serviceOf(s *discoveryv1.EndpointSlice) types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discoveryv1.LabelServiceName]}
}

// written records a slice as returned by a create or update.
func (t *sliceTracker) written(s *discoveryv1.EndpointSlice) {
	t.set(s, s.Generation)
}

// deleted records that the controller deleted s.
func (t *sliceTracker) deleted(s *discoveryv1.EndpointSlice) {
	t.set(s, deletionExpected)
}

func (t *sliceTracker) set(s *discoveryv1.EndpointSlice, gen int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	svc := serviceOf(s)
	if t.gens[svc] == nil {
		t.gens[svc] = map[types.UID]int64{}
	}
	t.gens[svc][s.UID] = gen
}

// shouldSync reports whether an observed slice differs from what the
// controller last wrote (someone else changed it, or it is unknown).
func (t *sliceTracker) shouldSync(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.gens[serviceOf(s)][s.UID]
	return !ok || g != s.Generation
}

// handleDeletion forgets a slice whose deletion was observed and reports
// whether the controller expected it (deleted it itself). A slice it did
// not know (written before a restart) was not expected either.
func (t *sliceTracker) handleDeletion(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	svc := serviceOf(s)
	g, ok := t.gens[svc][s.UID]
	if !ok {
		return false
	}
	delete(t.gens[svc], s.UID)
	if len(t.gens[svc]) == 0 {
		delete(t.gens, svc)
	}
	return g == deletionExpected
}

// stale reports whether the cached slices of a Service are behind the
// controller's own writes.
func (t *sliceTracker) stale(svc types.NamespacedName, cached []*discoveryv1.EndpointSlice) bool {
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
		if g != deletionExpected && !seen[uid] {
			return true
		}
	}
	return false
}

// forgetService drops everything known about a Service's slices.
func (t *sliceTracker) forgetService(svc types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.gens, svc)
}
