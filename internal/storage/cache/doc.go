// Package cache is a watch cache: it mirrors one prefix of a storage.Interface
// (say "/registry/pods/") in memory and serves lists and watches of that
// prefix, or of any prefix under it, without touching the store.
//
// Run drives it: it lists the prefix, then watches the store from the list's
// revision and applies each event. If the store's watch reports compaction
// (the cache fell too far behind) it lists again; every cache watcher open at
// that moment is ended with EventError(ErrCompacted), because the events in
// between are lost.
//
// The cache keeps the current objects and a ring of the last N events. Watch
// replays buffered events newer than the requested revision and then follows
// live ones; a revision older than the ring (once the cache has moved past
// it) gives ErrCompacted, which the API server answers with 410 Gone. Each
// watcher has a bounded buffer; one that lets it fill, or keeps more than
// a backlog (1,000 events) waiting for longer than a stall (5 s), is ended
// with EventError(ErrTooSlow), which wraps ErrCompacted, so a slow client
// never holds the cache or other watchers back, and one that stopped
// reading holds only a few seconds of events.
//
// WaitForRevision lets a reader wait until the cache is at least as new as a
// revision read from the store. Events only arrive for this prefix, so when
// the prefix is quiet the cache confirms such a revision by listing the
// prefix from the store at that revision and checking it matches.
//
// The state and its rules live in a pure core (state, no goroutines or I/O);
// Cache adds locking and fan-out to watchers, and Run is the driver.
package cache
