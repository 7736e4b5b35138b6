package job

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ExpectationsTimeout is how long a job waits for the informer to show the
// pod creates and deletes it asked for before it manages pods again
// anyway (a watch event may have been lost), as upstream.
const ExpectationsTimeout = 5 * time.Minute

// expectations counts, per job key, the pod creations and deletions the
// controller asked for and has not yet seen in the informer. While any are
// outstanding the job's pods are not managed (nor the job declared
// finished), so a burst of events cannot make it create or delete twice.
// It is upstream's ControllerExpectations.
type expectations struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*expectation
}

type expectation struct {
	add, del int
	at       time.Time
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, m: map[string]*expectation{}}
}

func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok || (x.add <= 0 && x.del <= 0) {
		return true
	}
	return e.now().Sub(x.at) > ExpectationsTimeout
}

func (e *expectations) expectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{add: n, at: e.now()}
}

func (e *expectations) expectDeletions(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{del: n, at: e.now()}
}

func (e *expectations) creationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.add--
	}
}

func (e *expectations) deletionObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.del--
	}
}

func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

// finalizerExpectations holds, per job key, the UIDs of the pods whose
// tracking finalizer the controller removed and the informer still shows:
// those pods are already counted in the job's status, and must not be
// counted again from a stale cache.
type finalizerExpectations struct {
	mu sync.Mutex
	m  map[string]map[types.UID]bool
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{m: map[string]map[types.UID]bool{}}
}

func (f *finalizerExpectations) expectRemoved(key string, uids []types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.m[key]
	if s == nil {
		s = map[types.UID]bool{}
		f.m[key] = s
	}
	for _, u := range uids {
		s[u] = true
	}
}

func (f *finalizerExpectations) removalObserved(key string, uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.m[key]; s != nil {
		delete(s, uid)
		if len(s) == 0 {
			delete(f.m, key)
		}
	}
}

// expected is a copy of key's UIDs.
func (f *finalizerExpectations) expected(key string) map[types.UID]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[types.UID]bool, len(f.m[key]))
	for u := range f.m[key] {
		out[u] = true
	}
	return out
}

func (f *finalizerExpectations) forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
}
