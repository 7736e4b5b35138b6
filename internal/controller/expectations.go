package controller

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ExpectationsTimeout is how long a controller waits for its informer to
// show the creates and deletes it asked for before it acts again anyway (a
// watch event may have been lost), as upstream.
const ExpectationsTimeout = 5 * time.Minute

// Expectations records, per owner key, how many creations and which
// deletions a controller has asked for and not yet seen in its informer.
// While any are outstanding the owner's objects are not managed again, so
// a burst of events cannot make the controller create or delete twice. It
// is upstream's UIDTrackingControllerExpectations: an expected deletion is
// named, and counted once however many events show it.
type Expectations struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*expectation
}

type expectation struct {
	add, del int
	at       time.Time
	// deleting holds the keys of the objects whose deletion is expected.
	deleting map[string]bool
}

// NewExpectations keeps time with now.
func NewExpectations(now func() time.Time) *Expectations {
	return &Expectations{now: now, m: map[string]*expectation{}}
}

// Satisfied reports whether the owner may manage its objects: nothing is
// expected, everything expected was seen, or the expectations expired.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok || (x.add <= 0 && x.del <= 0) {
		return true
	}
	return e.now().Sub(x.at) > ExpectationsTimeout
}

// Expect replaces the owner's expectations with n creations and the
// deletion of the objects with the keys deleting (upstream's
// SetExpectations, with the deletions named): what a controller that
// creates and deletes in one pass, as the DaemonSet controller, expects.
func (e *Expectations) Expect(key string, n int, deleting []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{add: n, at: e.now(), deleting: make(map[string]bool, len(deleting))}
	for _, k := range deleting {
		x.deleting[k] = true
	}
	x.del = len(x.deleting)
	e.m[key] = x
}

// ExpectCreations replaces the owner's expectations with n creations.
func (e *Expectations) ExpectCreations(key string, n int) { e.Expect(key, n, nil) }

// ExpectDeletions replaces the owner's expectations with the deletion of
// the objects with the given keys.
func (e *Expectations) ExpectDeletions(key string, objKeys []string) { e.Expect(key, 0, objKeys) }

// CreationObserved counts one expected creation as seen (or as never to be
// seen, after a failed create).
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.add--
	}
}

// DeletionObserved counts the deletion of the object objKey, if it was
// expected and not counted yet.
func (e *Expectations) DeletionObserved(key, objKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok && x.deleting[objKey] {
		delete(x.deleting, objKey)
		x.del--
	}
}

// Forget drops the owner's expectations (it was deleted).
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

// UIDExpectations records, per owner key, the UIDs of objects a controller
// changed (the Job controller: pods whose tracking finalizer it removed)
// while its informer still shows them unchanged: what the controller must
// not act on again from a stale cache.
type UIDExpectations struct {
	mu sync.Mutex
	m  map[string]map[types.UID]bool
}

// NewUIDExpectations is an empty UIDExpectations.
func NewUIDExpectations() *UIDExpectations {
	return &UIDExpectations{m: map[string]map[types.UID]bool{}}
}

// Expect adds uids to the owner's pending changes.
func (e *UIDExpectations) Expect(key string, uids []types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.m[key]
	if s == nil {
		s = map[types.UID]bool{}
		e.m[key] = s
	}
	for _, u := range uids {
		s[u] = true
	}
}

// Observed drops uid from the owner's pending changes (the informer shows
// it, or it will never be made).
func (e *UIDExpectations) Observed(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.m[key]; s != nil {
		delete(s, uid)
		if len(s) == 0 {
			delete(e.m, key)
		}
	}
}

// Pending is a copy of the owner's pending UIDs.
func (e *UIDExpectations) Pending(key string) map[types.UID]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[types.UID]bool, len(e.m[key]))
	for u := range e.m[key] {
		out[u] = true
	}
	return out
}

// Forget drops the owner's pending changes (it was deleted).
func (e *UIDExpectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

// ObjectKey is the key Expectations names an object by: "namespace/name".
func ObjectKey(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// ObjectKeys are the ObjectKeys of objs.
func ObjectKeys[T metav1.Object](objs []T) []string {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = ObjectKey(o)
	}
	return keys
}
