package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/internal/keyspace"
)

// DefaultHistory is the number of changes kept when Options.History is 0.
const DefaultHistory = 10000

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("memory: store closed")

// Options configure a Store.
type Options struct {
	// History is the number of most recent changes kept for past reads and
	// watches (default DefaultHistory).
	History int
}

// Store is the in-memory backend. Create it with New.
type Store struct {
	mu      sync.RWMutex
	items   map[string]storage.KeyValue
	keys    keyspace.Sorted
	rev     int64 // latest revision
	compact int64 // last Compact revision: List below it is compacted
	// ring holds the changes with revisions in (floor, rev]; the change of
	// revision r sits at ring[r%len(ring)].
	ring  []change
	floor int64
	// wake is closed (and replaced) on every write to wake the watchers.
	wake   chan struct{}
	closed chan struct{}
	// progress is closed (and replaced) by RequestProgress.
	progress chan struct{}
	done     bool
	wg       sync.WaitGroup
}

var _ storage.Interface = (*Store)(nil)

// change is one write: the key's value after it (kv, for a put) and before it
// (prev, nil for a create).
type change struct {
	del  bool
	kv   storage.KeyValue
	prev *storage.KeyValue
}

func (c change) event() storage.Event {
	ev := storage.Event{Key: c.kv.Key, Value: c.kv.Value, Revision: c.kv.ModRevision}
	if c.del {
		ev.Type = storage.EventDelete
		ev.Value = nil
	}
	if c.prev == nil {
		ev.IsCreate = true
	} else {
		ev.PrevValue = c.prev.Value
	}
	return ev
}

// New returns an empty store at revision 1.
func New(opts Options) *Store {
	n := opts.History
	if n <= 0 {
		n = DefaultHistory
	}
	return &Store{
		items:    make(map[string]storage.KeyValue),
		rev:      1,
		floor:    1,
		ring:     make([]change, n),
		wake:     make(chan struct{}),
		progress: make(chan struct{}),
		closed:   make(chan struct{}),
	}
}

// write records c as the next revision. Callers hold s.mu.
func (s *Store) write(c change) int64 {
	s.rev++
	c.kv.ModRevision = s.rev
	if c.del {
		delete(s.items, c.kv.Key)
		s.keys.Delete(c.kv.Key)
	} else {
		if _, ok := s.items[c.kv.Key]; !ok {
			s.keys.Insert(c.kv.Key)
		}
		s.items[c.kv.Key] = c.kv
	}
	s.ring[s.rev%int64(len(s.ring))] = c
	if s.rev-s.floor > int64(len(s.ring)) {
		s.floor = s.rev - int64(len(s.ring))
	}
	close(s.wake)
	s.wake = make(chan struct{})
	return s.rev
}

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return 0, ErrClosed
	}
	if _, ok := s.items[key]; ok {
		return 0, fmt.Errorf("create %s: %w", key, storage.ErrKeyExists)
	}
	kv := storage.KeyValue{Key: key, Value: clone(value), CreateRevision: s.rev + 1}
	return s.write(change{kv: kv}), nil
}

// Get implements storage.Interface.
func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.done {
		return storage.KeyValue{}, ErrClosed
	}
	kv, ok := s.items[key]
	if !ok {
		return storage.KeyValue{}, fmt.Errorf("get %s: %w", key, storage.ErrNotFound)
	}
	return kv, nil
}

// Update implements storage.Interface.
func (s *Store) Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return 0, ErrClosed
	}
	prev, ok := s.items[key]
	if !ok {
		return 0, fmt.Errorf("update %s: %w", key, storage.ErrNotFound)
	}
	if prev.ModRevision != expectedRevision {
		return 0, fmt.Errorf("update %s at revision %d (stored %d): %w", key, expectedRevision, prev.ModRevision, storage.ErrConflict)
	}
	kv := storage.KeyValue{Key: key, Value: clone(value), CreateRevision: prev.CreateRevision}
	return s.write(change{kv: kv, prev: &prev}), nil
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return storage.KeyValue{}, 0, ErrClosed
	}
	prev, ok := s.items[key]
	if !ok {
		return storage.KeyValue{}, 0, fmt.Errorf("delete %s: %w", key, storage.ErrNotFound)
	}
	if expectedRevision != 0 && prev.ModRevision != expectedRevision {
		return storage.KeyValue{}, 0, fmt.Errorf("delete %s at revision %d (stored %d): %w", key, expectedRevision, prev.ModRevision, storage.ErrConflict)
	}
	rev := s.write(change{del: true, kv: storage.KeyValue{Key: key}, prev: &prev})
	return prev, rev, nil
}

// List implements storage.Interface.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.done {
		return storage.ListResult{}, ErrClosed
	}
	rev := opts.Revision
	switch {
	case rev == 0:
		rev = s.rev
	case rev > s.rev:
		return storage.ListResult{}, fmt.Errorf("list %s at revision %d (current %d): %w", prefix, rev, s.rev, storage.ErrFutureRevision)
	case rev < s.compact || rev < s.floor:
		return storage.ListResult{}, fmt.Errorf("list %s at revision %d: %w", prefix, rev, storage.ErrCompacted)
	}
	start, end := keyspace.Start(prefix), keyspace.End(prefix)
	if opts.StartKey > start {
		start = opts.StartKey
	}
	var items []storage.KeyValue
	if rev == s.rev {
		keys := s.keys.Range(start, end)
		n := len(keys)
		if opts.Limit > 0 && int64(n) > opts.Limit {
			n = int(opts.Limit)
		}
		items = make([]storage.KeyValue, n)
		for i, k := range keys[:n] {
			items[i] = s.items[k]
		}
		return page(items, int64(len(keys)), rev), nil
	}
	// A past revision: start from the current items in range and undo the
	// changes after rev, newest first.
	past := make(map[string]storage.KeyValue)
	for _, k := range s.keys.Range(start, end) {
		past[k] = s.items[k]
	}
	for r := s.rev; r > rev; r-- {
		c := s.ring[r%int64(len(s.ring))]
		k := c.kv.Key
		if k < start || !keyspace.Before(k, end) {
			continue
		}
		if c.prev == nil {
			delete(past, k)
		} else {
			past[k] = *c.prev
		}
	}
	items = make([]storage.KeyValue, 0, len(past))
	for _, kv := range past {
		items = append(items, kv)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Key < items[j].Key })
	total := int64(len(items))
	if opts.Limit > 0 && total > opts.Limit {
		items = items[:opts.Limit]
	}
	return page(items, total, rev), nil
}

func page(items []storage.KeyValue, total, rev int64) storage.ListResult {
	res := storage.ListResult{Items: items, Revision: rev}
	if rest := total - int64(len(items)); rest > 0 {
		res.More = true
		res.RemainingCount = rest
	}
	return res
}

// CurrentRevision implements storage.Interface.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.done {
		return 0, ErrClosed
	}
	return s.rev, nil
}

// Compact implements storage.Interface.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return ErrClosed
	}
	if revision > s.rev {
		return fmt.Errorf("compact at %d (current %d): %w", revision, s.rev, storage.ErrFutureRevision)
	}
	if revision <= s.compact {
		return fmt.Errorf("compact at %d (compacted at %d): %w", revision, s.compact, storage.ErrCompacted)
	}
	s.compact = revision
	// Changes below revision are no longer needed; drop them for the GC.
	for r := s.floor + 1; r < revision; r++ {
		s.ring[r%int64(len(s.ring))] = change{}
	}
	s.floor = max(s.floor, revision-1)
	close(s.wake) // let watchers that fell behind notice
	s.wake = make(chan struct{})
	return nil
}

// Close ends every watch and makes further calls fail with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if !s.done {
		s.done = true
		close(s.closed)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append([]byte(nil), b...)
}

// RequestProgress implements storage.ProgressRequester: every watch that
// has caught up sends an EventProgress with the current revision.
func (s *Store) RequestProgress(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return ErrClosed
	}
	close(s.progress)
	s.progress = make(chan struct{})
	return nil
}
