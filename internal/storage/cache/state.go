package cache

import (
	"fmt"
	"sort"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/internal/keyspace"
)

// state is the pure core of the cache: the objects under one prefix at one
// revision, and the most recent events. It has no goroutines, clock, I/O or
// locking; Cache serializes calls.
type state struct {
	items map[string]storage.KeyValue
	keys  keyspace.Sorted
	// rev is the revision items reflect: the newest event applied, the list
	// revision, or a revision confirmed by confirm.
	rev int64
	// seen is the newest revision received from the store (events or list);
	// a rewatch resumes after it. seen <= rev.
	seen int64
	// ring holds the newest events in revision order; every event after
	// floor is in it, so watches from a revision >= floor can be served.
	ring  ring
	floor int64
	ready bool
}

func newState(capacity int) *state {
	return &state{items: make(map[string]storage.KeyValue), ring: newRing(capacity)}
}

// reset replaces the state with a list of the prefix taken at rev and drops
// the buffered events.
func (s *state) reset(items []storage.KeyValue, rev int64) {
	s.items = make(map[string]storage.KeyValue, len(items))
	s.keys = keyspace.Sorted{}
	for _, kv := range items {
		s.items[kv.Key] = kv
		s.keys.Insert(kv.Key)
	}
	s.rev, s.seen, s.floor = rev, rev, rev
	s.ring.clear()
	s.ready = true
}

// apply adds one event from the store's watch. It reports whether the event
// is new (to be sent to watchers): events at or before seen are duplicates
// from a rewatch. An event at or before rev but after seen arrived late,
// after confirm vouched for rev: it is buffered and delivered, but the items
// already reflect rev, so they are left alone.
func (s *state) apply(ev storage.Event) (bool, error) {
	if ev.Type == storage.EventProgress {
		// Nothing under the prefix changed up to ev.Revision.
		if s.ready && ev.Revision > s.seen {
			s.seen = ev.Revision
			s.rev = max(s.rev, ev.Revision)
		}
		return false, nil
	}
	if ev.Type == storage.EventError {
		return false, fmt.Errorf("cache: error event applied: %w", ev.Err)
	}
	if ev.Revision <= s.seen {
		return false, nil
	}
	s.seen = ev.Revision
	if evicted, ok := s.ring.push(ev); ok {
		s.floor = evicted.Revision
	}
	if ev.Revision <= s.rev {
		return true, nil
	}
	s.rev = ev.Revision
	switch ev.Type {
	case storage.EventDelete:
		delete(s.items, ev.Key)
		s.keys.Delete(ev.Key)
	case storage.EventPut:
		kv := storage.KeyValue{Key: ev.Key, Value: ev.Value, CreateRevision: ev.Revision, ModRevision: ev.Revision, Stale: ev.Stale}
		if old, ok := s.items[ev.Key]; ok && !ev.IsCreate {
			kv.CreateRevision = old.CreateRevision
		} else if !ok {
			s.keys.Insert(ev.Key)
		}
		s.items[ev.Key] = kv
	}
	return true, nil
}

// list returns the items under prefix, sorted by key, and the revision.
func (s *state) list(prefix string) ([]storage.KeyValue, int64) {
	keys := s.keys.Range(keyspace.Start(prefix), keyspace.End(prefix))
	items := make([]storage.KeyValue, len(keys))
	for i, k := range keys {
		items[i] = s.items[k]
	}
	return items, s.rev
}

// since returns the buffered events under prefix after revision from, in
// order, or ErrCompacted if events after from may have been dropped.
func (s *state) since(prefix string, from int64) ([]storage.Event, error) {
	if from < s.floor {
		return nil, fmt.Errorf("cache: revision %d is older than the oldest kept (%d): %w", from, s.floor, storage.ErrCompacted)
	}
	var out []storage.Event
	for i := s.ring.search(from); i < s.ring.len(); i++ {
		if ev := s.ring.at(i); keyspace.Match(prefix, ev.Key) {
			out = append(out, ev)
		}
	}
	return out, nil
}

// confirm advances rev to the store revision rev if items, the store's list
// of the prefix at rev, equals the cached items: then no event under the
// prefix happened in (s.rev, rev] that would change them, and any that is
// still in flight nets out to nothing. It reports whether rev advanced.
func (s *state) confirm(items []storage.KeyValue, rev int64) bool {
	if !s.ready || rev <= s.rev || len(items) != len(s.items) {
		return false
	}
	for _, kv := range items {
		if cur, ok := s.items[kv.Key]; !ok || cur.ModRevision != kv.ModRevision {
			return false
		}
	}
	s.rev = rev
	return true
}

// ring is a bounded FIFO of events in revision order. Its buffer grows as
// events come, up to max: most resources of a cluster see few writes, and
// a full buffer for each would cost memory and start-up time for nothing.
type ring struct {
	buf   []storage.Event
	max   int
	start int // index of the oldest event
	n     int
}

func newRing(capacity int) ring { return ring{max: capacity} }

func (r *ring) len() int { return r.n }

// at returns the i-th oldest event.
func (r *ring) at(i int) storage.Event { return r.buf[(r.start+i)%len(r.buf)] }

// push appends ev, evicting and returning the oldest event when full.
func (r *ring) push(ev storage.Event) (storage.Event, bool) {
	if r.n == len(r.buf) && len(r.buf) < r.max {
		grown := make([]storage.Event, min(max(2*len(r.buf), 16), r.max))
		for i := range r.n {
			grown[i] = r.at(i)
		}
		r.buf, r.start = grown, 0
	}
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = ev
		r.n++
		return storage.Event{}, false
	}
	old := r.buf[r.start]
	r.buf[r.start] = ev
	r.start = (r.start + 1) % len(r.buf)
	return old, true
}

// search returns the index of the first event with a revision after rev.
func (r *ring) search(rev int64) int {
	return sort.Search(r.n, func(i int) bool { return r.at(i).Revision > rev })
}

func (r *ring) clear() { r.buf, r.start, r.n = nil, 0, 0 }
