package job

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

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
