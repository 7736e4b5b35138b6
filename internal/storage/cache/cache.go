package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/internal/keyspace"
)

// Defaults for Options.
const (
	DefaultEvents         = 1000
	DefaultWatcherBuffer  = 100000
	DefaultWatcherBacklog = 1000
	DefaultWatcherStall   = 5 * time.Second
	DefaultPageSize       = 1000
)

var (
	// ErrTooSlow ends a watcher whose buffer filled up. It wraps
	// storage.ErrCompacted: the client must list again.
	ErrTooSlow = fmt.Errorf("cache: watcher fell too far behind: %w", storage.ErrCompacted)
	// ErrStopped ends watchers when Run returns, and is returned by calls
	// made after that.
	ErrStopped = errors.New("cache: stopped")
)

// Options configure a Cache. Zero values take the defaults.
type Options struct {
	// Events is how many recent events are kept for watches that start from
	// a past revision (default DefaultEvents).
	Events int
	// WatcherBuffer is how many events a watcher may have waiting before it
	// is ended with ErrTooSlow (default DefaultWatcherBuffer). The queue
	// grows only as far as a consumer falls behind.
	WatcherBuffer int
	// WatcherBacklog and WatcherStall end a watcher sooner: one that has
	// had more than WatcherBacklog events waiting for longer than
	// WatcherStall is ended with ErrTooSlow at its next event (defaults
	// DefaultWatcherBacklog, DefaultWatcherStall). A burst (a collection
	// deleted at once) goes to every watcher that drains it in time; a
	// consumer that stopped reading holds about WatcherStall's worth of
	// events, not WatcherBuffer's.
	WatcherBacklog int
	WatcherStall   time.Duration
	// PageSize is the page size of the lists the cache reads from the store
	// (default DefaultPageSize).
	PageSize int64
	// Logger receives relists and store errors (default slog.Default()).
	Logger *slog.Logger
}

// Cache is a watch cache of one prefix of a store. Create it with New and
// start it with Run. All methods are safe for concurrent use.
type Cache struct {
	store  storage.Interface
	prefix string
	opts   Options
	log    *slog.Logger

	mu       sync.Mutex
	st       *state
	watchers map[*watcher]struct{}
	// changed is closed and replaced whenever the revision, readiness or
	// stopped state changes.
	changed chan struct{}
	stopped bool
	// waiters counts WaitForRevision calls waiting for wantRev (the highest
	// revision any of them wants).
	waiters int
	wantRev int64
	// confirmReq asks the driver to confirm a newer revision for waiters.
	confirmReq chan struct{}
}

// watcher is one watch. The cache appends events to its queue under the
// cache's lock without ever blocking; the watcher's own goroutine moves them
// to the consumer's channel at whatever pace the consumer reads.
type watcher struct {
	prefix string
	from   int64 // only events after from are sent
	out    chan storage.Event
	stop   func() bool // unregisters the ctx callback
	wake   chan struct{}

	mu    sync.Mutex
	queue []storage.Event
	// inflight counts events the forwarder has taken from the queue but not
	// yet put into out.
	inflight atomic.Int64
	final    *storage.Event // sent once the queue is drained, then out closes
	closed   bool           // out is closed: the consumer is gone
	// behindSince is when more than the backlog limit started waiting
	// (zero while fewer do).
	behindSince time.Time
}

// watcherLimits bound what a watcher may have waiting (Options).
type watcherLimits struct {
	buffer, backlog int
	stall           time.Duration
}

// watcherChannel is the buffer of each watcher's channel: events go
// straight into it while the consumer keeps up.
const watcherChannel = 16

// push queues ev unless the watcher is too far behind: limits.buffer
// events already waiting (queued, being forwarded, or unread in the
// channel), or more than limits.backlog for longer than limits.stall.
func (w *watcher) push(ev storage.Event, limits watcherLimits) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return true // the consumer went away; its context callback unregisters it
	}
	waiting := len(w.queue) + len(w.out) + int(w.inflight.Load())
	switch {
	case waiting >= limits.buffer:
		return false
	case waiting < limits.backlog:
		w.behindSince = time.Time{}
	case w.behindSince.IsZero():
		w.behindSince = time.Now()
	case time.Since(w.behindSince) > limits.stall:
		return false
	}
	if len(w.queue) == 0 && w.inflight.Load() == 0 {
		select {
		case w.out <- ev: // nothing ahead of it: deliver directly
			return true
		default:
		}
	}
	w.queue = append(w.queue, ev)
	w.signal()
	return true
}

// finish queues the final event.
func (w *watcher) finish(ev storage.Event) {
	w.mu.Lock()
	w.final = &ev
	w.mu.Unlock()
	w.signal()
}

func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// forward delivers queued events until the final one, or until ctx ends;
// then it closes out.
func (w *watcher) forward(ctx context.Context) {
	defer func() {
		// Under the lock: push sends to out directly while holding it.
		w.mu.Lock()
		w.closed = true
		close(w.out)
		w.mu.Unlock()
	}()
	for {
		w.mu.Lock()
		batch, final := w.queue, w.final
		w.queue = nil
		w.inflight.Store(int64(len(batch)))
		w.mu.Unlock()
		for _, ev := range batch {
			select {
			case w.out <- ev:
				w.inflight.Add(-1)
			case <-ctx.Done():
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		if final != nil {
			select {
			case w.out <- *final:
			case <-ctx.Done():
			}
			return
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			return
		}
	}
}

// New returns a cache of the keys under prefix (which ends in '/') in store.
// It serves nothing until Run has listed the prefix.
func New(store storage.Interface, prefix string, opts Options) *Cache {
	if opts.Events <= 0 {
		opts.Events = DefaultEvents
	}
	if opts.WatcherBuffer <= 0 {
		opts.WatcherBuffer = DefaultWatcherBuffer
	}
	if opts.WatcherBacklog <= 0 {
		opts.WatcherBacklog = DefaultWatcherBacklog
	}
	if opts.WatcherStall <= 0 {
		opts.WatcherStall = DefaultWatcherStall
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Cache{
		store:      store,
		prefix:     prefix,
		opts:       opts,
		log:        log.With("prefix", prefix),
		st:         newState(opts.Events),
		watchers:   make(map[*watcher]struct{}),
		changed:    make(chan struct{}),
		confirmReq: make(chan struct{}, 1),
	}
}

// Prefix returns the prefix the cache mirrors.
func (c *Cache) Prefix() string { return c.prefix }

// Ready reports whether the cache has listed the store and serves requests.
func (c *Cache) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.ready
}

// Len returns how many objects the cache holds, and whether it is ready
// (0 and false before it has listed the store).
func (c *Cache) Len() (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.st.items), c.st.ready
}

// Revision returns the revision the cache reflects (0 before it is ready).
func (c *Cache) Revision() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.rev
}

// WaitForRevision blocks until the cache reflects revision rev or a newer
// one, or until ctx ends (returning an error wrapping ctx.Err()).
func (c *Cache) WaitForRevision(ctx context.Context, rev int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	registered := false
	defer func() {
		if registered {
			if c.waiters--; c.waiters == 0 {
				c.wantRev = 0
			}
		}
	}()
	for {
		switch {
		case c.stopped:
			return ErrStopped
		case c.st.ready && c.st.rev >= rev:
			return nil
		}
		if !registered {
			c.waiters++
			registered = true
		}
		c.wantRev = max(c.wantRev, rev)
		select {
		case c.confirmReq <- struct{}{}:
		default:
		}
		if err := c.sleep(ctx); err != nil {
			return fmt.Errorf("cache: waiting for revision %d (at %d): %w", rev, c.st.rev, err)
		}
	}
}

// sleep waits, with c.mu unlocked, until the state changes or ctx ends.
func (c *Cache) sleep(ctx context.Context) error {
	ch := c.changed
	c.mu.Unlock()
	defer c.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitReady waits, with c.mu held, until the cache is ready.
func (c *Cache) waitReady(ctx context.Context) error {
	for !c.st.ready {
		if c.stopped {
			return ErrStopped
		}
		if err := c.sleep(ctx); err != nil {
			return err
		}
	}
	if c.stopped {
		return ErrStopped
	}
	return nil
}

// Get returns the cached item under key, if the cache is ready and holds
// it. It does not wait: the item may be older than the store's (the cache
// follows the store's watch), so a caller writes it back only with
// compare-and-swap on its ModRevision.
func (c *Cache) Get(key string) (storage.KeyValue, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.st.ready || !c.under(key) {
		return storage.KeyValue{}, false
	}
	kv, ok := c.st.items[key]
	return kv, ok
}

// List returns the cached items under prefix (which must be under the
// cache's prefix), sorted by key, and the revision they reflect. It waits
// until the cache is ready; if ctx ends first it returns nil and 0.
func (c *Cache) List(ctx context.Context, prefix string) ([]storage.KeyValue, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.under(prefix) || c.waitReady(ctx) != nil {
		return nil, 0
	}
	return c.st.list(prefix)
}

// Watch streams the changes under prefix (the cache's prefix, a prefix or a
// key under it) after fromRevision: first the buffered ones, then live ones.
// fromRevision 0 means from now on. A revision older than the buffered
// events gives ErrCompacted. The channel is closed when ctx ends, or after
// an EventError (ErrTooSlow, ErrCompacted on a relist, ErrStopped).
func (c *Cache) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan storage.Event, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.under(prefix) {
		return nil, fmt.Errorf("cache: %q is not under %q", prefix, c.prefix)
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	if fromRevision == 0 {
		fromRevision = c.st.rev
	}
	replay, err := c.st.since(prefix, fromRevision)
	if err != nil {
		return nil, err
	}
	return c.register(ctx, prefix, fromRevision, replay), nil
}

// ListAndWatch atomically lists prefix and starts a watch of every change
// after the listed revision. If ctx ends before the cache is ready it
// returns no items, revision 0 and a closed channel.
func (c *Cache) ListAndWatch(ctx context.Context, prefix string) ([]storage.KeyValue, int64, <-chan storage.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.under(prefix) || c.waitReady(ctx) != nil {
		ch := make(chan storage.Event)
		close(ch)
		return nil, 0, ch
	}
	items, rev := c.st.list(prefix)
	return items, rev, c.register(ctx, prefix, rev, nil)
}

func (c *Cache) under(prefix string) bool { return strings.HasPrefix(prefix, c.prefix) }

// register adds a watcher with c.mu held, its queue starting with replay.
func (c *Cache) register(ctx context.Context, prefix string, from int64, replay []storage.Event) <-chan storage.Event {
	w := &watcher{prefix: prefix, from: from, out: make(chan storage.Event, watcherChannel), wake: make(chan struct{}, 1)}
	w.queue = append(w.queue, replay...)
	c.watchers[w] = struct{}{}
	w.stop = context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watchers, w)
	})
	go w.forward(ctx)
	w.signal()
	return w.out
}

// fanout queues ev for the watchers that want it, with c.mu held. It never
// blocks: a watcher too far behind (Options.WatcherBuffer, WatcherBacklog,
// WatcherStall) is ended with ErrTooSlow.
func (c *Cache) fanout(ev storage.Event) {
	limits := watcherLimits{buffer: c.opts.WatcherBuffer, backlog: c.opts.WatcherBacklog, stall: c.opts.WatcherStall}
	for w := range c.watchers {
		if ev.Revision <= w.from || !keyspace.Match(w.prefix, ev.Key) {
			continue
		}
		if !w.push(ev, limits) {
			c.end(w, ErrTooSlow)
		}
	}
}

// end queues a final EventError(err) for w and unregisters it, with c.mu
// held; its channel closes once the consumer has read what was queued.
func (c *Cache) end(w *watcher, err error) {
	delete(c.watchers, w)
	w.stop()
	w.finish(storage.Event{Type: storage.EventError, Err: err})
}

// notify wakes everything waiting on c.changed, with c.mu held.
func (c *Cache) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}
