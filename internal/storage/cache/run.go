package cache

import (
	"context"
	"errors"
	"sync"
	"time"

	"plainkube.dev/plainkube/internal/storage"
)

// Retry and confirmation delays of the driver.
const (
	minBackoff = 10 * time.Millisecond
	maxBackoff = time.Second
	// confirmGrace is how long a waiter behind the store waits for the
	// watch to deliver before the driver lists to confirm a quiet prefix.
	confirmGrace = 5 * time.Millisecond
)

var errWatchClosed = errors.New("cache: store watch closed")

// Run lists the prefix, then follows the store's watch, relisting after a
// compaction and retrying other errors with backoff, until ctx ends. Then
// it ends every watcher with ErrStopped. Call it once.
func (c *Cache) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { c.confirmLoop(ctx) })
	defer wg.Wait()
	defer c.stop()

	backoff := minBackoff
	for ctx.Err() == nil {
		if err := c.relist(ctx); err != nil {
			if ctx.Err() == nil {
				c.log.Warn("cache: list failed", "err", err)
				backoff = wait(ctx, backoff)
			}
			continue
		}
		backoff = minBackoff
		for ctx.Err() == nil {
			err := c.follow(ctx)
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, storage.ErrCompacted) {
				c.log.Info("cache: watch compacted, relisting", "err", err)
				break
			}
			c.log.Warn("cache: watch failed, resuming", "err", err)
			backoff = wait(ctx, backoff)
		}
	}
}

// relist replaces the state with a fresh list of the prefix. Watchers of
// the old state are ended with ErrCompacted: the events between are lost.
func (c *Cache) relist(ctx context.Context) error {
	items, rev, err := c.listAll(ctx, 0)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.watchers {
		c.end(w, storage.ErrCompacted)
	}
	c.st.reset(items, rev)
	c.notify()
	c.log.Debug("cache: listed", "items", len(items), "revision", rev)
	return nil
}

// listAll reads every item under the prefix at rev (0: latest), in pages.
func (c *Cache) listAll(ctx context.Context, rev int64) ([]storage.KeyValue, int64, error) {
	var items []storage.KeyValue
	opts := storage.ListOptions{Revision: rev, Limit: c.opts.PageSize}
	for {
		res, err := c.store.List(ctx, c.prefix, opts)
		if err != nil {
			return nil, 0, err
		}
		items = append(items, res.Items...)
		if !res.More || len(res.Items) == 0 {
			return items, res.Revision, nil
		}
		opts.Revision = res.Revision
		opts.StartKey = res.Items[len(res.Items)-1].Key + "\x00"
	}
}

// follow watches the store from the newest revision seen and applies its
// events until the watch ends; it returns why.
func (c *Cache) follow(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.mu.Lock()
	from := c.st.seen
	c.mu.Unlock()
	ch, err := c.store.Watch(wctx, c.prefix, from)
	if err != nil {
		return err
	}
	for ev := range ch {
		if ev.Type == storage.EventError {
			return ev.Err
		}
		c.mu.Lock()
		err := c.applyLocked(ev)
		// Apply whatever else is already waiting under the same lock.
		for more := true; more && err == nil; {
			select {
			case ev, ok := <-ch:
				switch {
				case !ok:
					more = false
				case ev.Type == storage.EventError:
					c.mu.Unlock()
					return ev.Err
				default:
					err = c.applyLocked(ev)
				}
			default:
				more = false
			}
		}
		c.notify()
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return errWatchClosed
}

func (c *Cache) applyLocked(ev storage.Event) error {
	fresh, err := c.st.apply(ev)
	if fresh {
		c.fanout(ev)
	}
	return err
}

// confirmLoop serves WaitForRevision calls that wait for a revision the
// watch has not brought, which happens when nothing under the prefix
// changed: it asks the store's watches for progress, and failing that
// confirms the store's revision by listing at it.
func (c *Cache) confirmLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.confirmReq:
		}
		// Ask the watch to report its progress first; list the prefix to
		// confirm it only if that does not bring the cache up to date.
		pr, canAsk := c.store.(storage.ProgressRequester)
		for delay, attempt := confirmGrace, 0; c.behind(); delay, attempt = min(2*delay, maxBackoff), attempt+1 {
			if canAsk {
				pr.RequestProgress(ctx)
			}
			if wait(ctx, delay); ctx.Err() != nil {
				return
			}
			if c.behind() && (!canAsk || attempt > 0) {
				c.confirm(ctx)
			}
		}
	}
}

// behind reports whether a waiter wants a revision newer than the cache's.
func (c *Cache) behind() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.ready && !c.stopped && c.waiters > 0 && c.wantRev > c.st.rev
}

// confirm advances the cache to the store's current revision if the
// prefix has not changed since the cache's revision.
func (c *Cache) confirm(ctx context.Context) {
	cur, err := c.store.CurrentRevision(ctx)
	if err != nil {
		return
	}
	c.mu.Lock()
	have := c.st.rev
	c.mu.Unlock()
	if cur <= have {
		return // the waiter wants a revision the store has not reached
	}
	items, rev, err := c.listAll(ctx, cur)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st.confirm(items, rev) {
		c.notify()
	}
}

// stop ends every watcher and fails later calls.
func (c *Cache) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	for w := range c.watchers {
		c.end(w, ErrStopped)
	}
	c.notify()
}

// wait sleeps for d or until ctx ends, and returns the next backoff.
func wait(ctx context.Context, d time.Duration) time.Duration {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return min(2*d, maxBackoff)
}
