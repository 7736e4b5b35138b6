package cache_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/cache"
	"plainkube.dev/plainkube/internal/storage/memory"
	"plainkube.dev/plainkube/internal/storage/storagetest"
)

const prefix = "/registry/pods/"

// start runs a cache over store until the test ends and waits until ready.
func start(t testing.TB, store storage.Interface, opts cache.Options) *cache.Cache {
	t.Helper()
	c := cache.New(store, prefix, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	waitFor(t, c, 1)
	return c
}

func waitFor(t testing.TB, c *cache.Cache, rev int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), storagetest.Timeout)
	defer cancel()
	if err := c.WaitForRevision(ctx, rev); err != nil {
		t.Fatalf("WaitForRevision(%d): %v", rev, err)
	}
}

func create(t testing.TB, s storage.Interface, key, val string) int64 {
	t.Helper()
	rev, err := s.Create(context.Background(), key, []byte(val))
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func update(t testing.TB, s storage.Interface, key, val string, rev int64) int64 {
	t.Helper()
	rev, err := s.Update(context.Background(), key, []byte(val), rev)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func keys(items []storage.KeyValue) string {
	var out []string
	for _, kv := range items {
		out = append(out, kv.Key)
	}
	return fmt.Sprint(out)
}

func newStore(t testing.TB, opts memory.Options) *memory.Store {
	s := memory.New(opts)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestList(t *testing.T) {
	s := newStore(t, memory.Options{})
	create(t, s, prefix+"b/2", "x")
	create(t, s, prefix+"a/1", "x")
	create(t, s, "/registry/podsx/a", "outside")
	c := start(t, s, cache.Options{PageSize: 1}) // pages: one item each
	cur, _ := s.CurrentRevision(t.Context())
	items, rev := c.List(t.Context(), prefix)
	if keys(items) != "["+prefix+"a/1 "+prefix+"b/2]" || rev != cur {
		t.Fatalf("List = %s at %d, want a/1 b/2 at %d", keys(items), rev, cur)
	}
	if !c.Ready() || c.Revision() != cur {
		t.Fatalf("Ready=%v Revision=%d", c.Ready(), c.Revision())
	}

	r1 := create(t, s, prefix+"a/0", "new")
	r2 := update(t, s, prefix+"a/1", "changed", 3)
	waitFor(t, c, r2)
	items, rev = c.List(t.Context(), prefix+"a/")
	if keys(items) != "["+prefix+"a/0 "+prefix+"a/1]" || rev != r2 {
		t.Fatalf("List = %s at %d", keys(items), rev)
	}
	want := []storage.KeyValue{
		{Key: prefix + "a/0", Value: []byte("new"), CreateRevision: r1, ModRevision: r1},
		{Key: prefix + "a/1", Value: []byte("changed"), CreateRevision: 3, ModRevision: r2},
	}
	for i, kv := range items {
		if kv.Key != want[i].Key || string(kv.Value) != string(want[i].Value) ||
			kv.CreateRevision != want[i].CreateRevision || kv.ModRevision != want[i].ModRevision {
			t.Errorf("item %d = %+v, want %+v", i, kv, want[i])
		}
	}
	if _, err := c.Watch(t.Context(), "/registry/services/", 0); err == nil {
		t.Error("Watch outside the cache's prefix succeeded")
	}
}

func TestGet(t *testing.T) {
	s := newStore(t, memory.Options{})
	c := cache.New(s, prefix, cache.Options{})
	r1 := create(t, s, prefix+"a/1", "x")
	if _, ok := c.Get(prefix + "a/1"); ok {
		t.Error("Get answered before the cache was ready")
	}
	c = start(t, s, cache.Options{})
	r2 := update(t, s, prefix+"a/1", "y", r1)
	waitFor(t, c, r2)
	if kv, ok := c.Get(prefix + "a/1"); !ok || string(kv.Value) != "y" || kv.ModRevision != r2 || kv.CreateRevision != r1 {
		t.Errorf("Get = %+v, %v; want y at %d, created at %d", kv, ok, r2, r1)
	}
	for _, key := range []string{prefix + "a/2", "/registry/services/a/1"} {
		if kv, ok := c.Get(key); ok {
			t.Errorf("Get(%s) = %+v, want nothing", key, kv)
		}
	}
}

func TestWatchReplay(t *testing.T) {
	s := newStore(t, memory.Options{})
	c := start(t, s, cache.Options{})
	r1 := create(t, s, prefix+"a/1", "1")
	r2 := create(t, s, prefix+"b/1", "1")
	r3 := update(t, s, prefix+"a/1", "2", r1)
	waitFor(t, c, r3)

	ch, err := c.Watch(t.Context(), prefix, r1)
	if err != nil {
		t.Fatal(err)
	}
	nsCh, err := c.Watch(t.Context(), prefix+"a/", r1-1)
	if err != nil {
		t.Fatal(err)
	}
	keyCh, err := c.Watch(t.Context(), prefix+"b/1", 0)
	if err != nil {
		t.Fatal(err)
	}
	r4 := create(t, s, prefix+"b/2", "1")
	r5 := update(t, s, prefix+"b/1", "2", r2)

	expect := func(ch <-chan storage.Event, want ...int64) {
		t.Helper()
		for _, rev := range want {
			if ev := storagetest.Next(t, ch); ev.Revision != rev || ev.Type != storage.EventPut {
				t.Fatalf("got %+v, want a put at %d", ev, rev)
			}
		}
	}
	expect(ch, r2, r3, r4, r5)
	expect(nsCh, r1, r3)
	expect(keyCh, r5)
}

func TestWatchTooOld(t *testing.T) {
	s := newStore(t, memory.Options{})
	c := start(t, s, cache.Options{Events: 3})
	var rs []int64
	for i := range 6 {
		rs = append(rs, create(t, s, fmt.Sprintf("%sa/%d", prefix, i), "v"))
	}
	waitFor(t, c, rs[5])
	// Kept: rs[3..5]. From rs[2] on is complete; before that is gone.
	if _, err := c.Watch(t.Context(), prefix, rs[1]); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("Watch from an evicted revision: %v, want ErrCompacted", err)
	}
	ch, err := c.Watch(t.Context(), prefix, rs[2])
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs[3:] {
		if ev := storagetest.Next(t, ch); ev.Revision != r {
			t.Fatalf("replayed %d, want %d", ev.Revision, r)
		}
	}
	if _, err := c.Watch(t.Context(), prefix, 0); err != nil {
		t.Fatalf("Watch from now: %v", err)
	}
}

// TestRelistAfterCompaction holds the cache's store watch back until the
// store's short history has moved past it: the watch then reports
// compaction, the cache relists, and its watchers are told to relist too.
func TestRelistAfterCompaction(t *testing.T) {
	mem := newStore(t, memory.Options{History: 4})
	g := storagetest.NewGated(mem)
	r1 := create(t, mem, prefix+"a", "1")
	c := start(t, g, cache.Options{})
	watch, err := c.Watch(t.Context(), prefix, 0)
	if err != nil {
		t.Fatal(err)
	}

	g.Hold()
	r := update(t, mem, prefix+"a", "2", r1)
	for i := range 40 {
		create(t, mem, fmt.Sprintf("%sb/%02d", prefix, i), "v")
	}
	if _, _, err := mem.Delete(t.Context(), prefix+"a", r); err != nil {
		t.Fatal(err)
	}
	last := create(t, mem, prefix+"c", "last")
	g.Release()

	for {
		ev := storagetest.Next(t, watch)
		if ev.Type == storage.EventError {
			if !errors.Is(ev.Err, storage.ErrCompacted) {
				t.Fatalf("watcher ended with %v, want ErrCompacted", ev.Err)
			}
			break
		}
	}
	storagetest.ExpectClosed(t, watch)
	waitFor(t, c, last)
	items, _ := c.List(t.Context(), prefix)
	want, _ := mem.List(t.Context(), prefix, storage.ListOptions{})
	if keys(items) != keys(want.Items) {
		t.Fatalf("after relist: %s, want %s", keys(items), keys(want.Items))
	}
	if _, err := c.Watch(t.Context(), prefix, r1); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("Watch from before the relist: %v, want ErrCompacted", err)
	}
	// The cache follows the store again.
	ch, err := c.Watch(t.Context(), prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	r = create(t, mem, prefix+"d", "after")
	if ev := storagetest.Next(t, ch); ev.Revision != r {
		t.Fatalf("after relist got %+v, want revision %d", ev, r)
	}
}

func TestSlowWatcher(t *testing.T) {
	s := newStore(t, memory.Options{})
	c := start(t, s, cache.Options{WatcherBuffer: 4})
	slow, err := c.Watch(t.Context(), prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := c.Watch(t.Context(), prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Each write reaches the fast watcher while the slow one never reads.
	for i := range 20 {
		r := create(t, s, fmt.Sprintf("%sa/%02d", prefix, i), "v")
		if ev := storagetest.Next(t, fast); ev.Revision != r {
			t.Fatalf("fast watcher got %+v, want revision %d", ev, r)
		}
	}
	for i := range 4 {
		if ev := storagetest.Next(t, slow); ev.Type != storage.EventPut {
			t.Fatalf("slow event %d: %+v", i, ev)
		}
	}
	ev := storagetest.Next(t, slow)
	if ev.Type != storage.EventError || !errors.Is(ev.Err, cache.ErrTooSlow) || !errors.Is(ev.Err, storage.ErrCompacted) {
		t.Fatalf("slow watcher: got %+v, want EventError(ErrTooSlow)", ev)
	}
	storagetest.ExpectClosed(t, slow)
}

// TestStalledWatcher: a watcher that keeps more than the backlog waiting
// for longer than the stall is ended at its next event, long before its
// buffer fills; one that drains a burst in time is kept.
func TestStalledWatcher(t *testing.T) {
	s := newStore(t, memory.Options{})
	const stall = 300 * time.Millisecond
	c := start(t, s, cache.Options{WatcherBacklog: 10, WatcherStall: stall})
	stalled, err := c.Watch(t.Context(), prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	bursty, err := c.Watch(t.Context(), prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	const burst = 50
	for i := range burst {
		create(t, s, fmt.Sprintf("%sa/%02d", prefix, i), "v")
	}
	for i := range burst { // the bursty one catches up within the stall
		if ev := storagetest.Next(t, bursty); ev.Type != storage.EventPut {
			t.Fatalf("bursty event %d: %+v", i, ev)
		}
	}
	time.Sleep(stall + 100*time.Millisecond)
	r := create(t, s, prefix+"b", "after the stall")
	if ev := storagetest.Next(t, bursty); ev.Revision != r {
		t.Fatalf("the bursty watcher got %+v, want revision %d", ev, r)
	}
	got := 0
	for ev := range stalled {
		if ev.Type == storage.EventError {
			if !errors.Is(ev.Err, cache.ErrTooSlow) {
				t.Fatalf("stalled watcher ended with %v", ev.Err)
			}
			if got != burst {
				t.Errorf("the stalled watcher read %d events before its end, want the %d queued before it", got, burst)
			}
			storagetest.ExpectClosed(t, stalled)
			return
		}
		got++
	}
	t.Fatal("the stalled watcher's channel closed without an error event")
}

// TestListAndWatchAtomic lists-and-watches while writes race in, and checks
// that each list plus its events adds up to the store's final state.
func TestListAndWatchAtomic(t *testing.T) {
	s := newStore(t, memory.Options{})
	const writes = 2000
	c := start(t, s, cache.Options{WatcherBuffer: writes})
	ctx := t.Context()

	type snapshot struct {
		items []storage.KeyValue
		rev   int64
		ch    <-chan storage.Event
	}
	const maxSnaps = 100
	snaps := make(chan snapshot, maxSnaps)
	writerDone := make(chan int64)
	go func() {
		revs := map[string]int64{}
		var last int64
		for i := range writes {
			key := fmt.Sprintf("%sns/%02d", prefix, i%17)
			var err error
			if r, ok := revs[key]; !ok {
				last, err = s.Create(ctx, key, fmt.Appendf(nil, "%d", i))
				revs[key] = last
			} else if i%5 == 0 {
				_, last, err = s.Delete(ctx, key, r)
				delete(revs, key)
			} else {
				last, err = s.Update(ctx, key, fmt.Appendf(nil, "%d", i), r)
				revs[key] = last
			}
			if err != nil {
				panic(err)
			}
		}
		writerDone <- last
	}()
	var last int64
	for n := 0; last == 0; n++ {
		items, rev, ch := c.ListAndWatch(ctx, prefix)
		snaps <- snapshot{items, rev, ch}
		select {
		case last = <-writerDone:
		default:
		}
		if n == maxSnaps-1 && last == 0 {
			last = <-writerDone
		}
	}
	close(snaps)
	t.Logf("%d list-and-watches during %d writes", len(snaps), writes)
	want, err := s.List(ctx, prefix, storage.ListOptions{Revision: last})
	if err != nil {
		t.Fatal(err)
	}
	for snap := range snaps {
		state := map[string]string{}
		for _, kv := range snap.items {
			state[kv.Key] = string(kv.Value)
		}
		for rev := snap.rev; rev < last; {
			ev := storagetest.Next(t, snap.ch)
			if ev.Revision <= rev {
				t.Fatalf("event %d not after %d", ev.Revision, rev)
			}
			rev = ev.Revision
			switch ev.Type {
			case storage.EventPut:
				state[ev.Key] = string(ev.Value)
			case storage.EventDelete:
				delete(state, ev.Key)
			default:
				t.Fatalf("unexpected event %+v", ev)
			}
		}
		if len(state) != len(want.Items) {
			t.Fatalf("list at %d + events: %d items, want %d", snap.rev, len(state), len(want.Items))
		}
		for _, kv := range want.Items {
			if state[kv.Key] != string(kv.Value) {
				t.Fatalf("list at %d + events: %s=%q, want %q", snap.rev, kv.Key, state[kv.Key], kv.Value)
			}
		}
	}
}

func TestWaitForRevisionQuietPrefix(t *testing.T) {
	s := newStore(t, memory.Options{})
	c := start(t, s, cache.Options{})
	create(t, s, prefix+"a", "v")
	other := create(t, s, "/registry/services/x", "v") // not under the prefix
	waitFor(t, c, other)
	if items, rev := c.List(t.Context(), prefix); len(items) != 1 || rev < other {
		t.Fatalf("List = %s at %d, want 1 item at >= %d", keys(items), rev, other)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := c.WaitForRevision(ctx, other+100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForRevision in the future: %v, want DeadlineExceeded", err)
	}
}

func TestWatchEnds(t *testing.T) {
	s := newStore(t, memory.Options{})
	c := cache.New(s, prefix, cache.Options{})
	runCtx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(runCtx)
	}()
	waitFor(t, c, 1)

	ctx, cancel := context.WithCancel(t.Context())
	ch, err := c.Watch(ctx, prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	storagetest.ExpectClosed(t, ch)

	ch, err = c.Watch(t.Context(), prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
	if ev := storagetest.Next(t, ch); ev.Type != storage.EventError || !errors.Is(ev.Err, cache.ErrStopped) {
		t.Fatalf("after Run ended: %+v, want EventError(ErrStopped)", ev)
	}
	storagetest.ExpectClosed(t, ch)
	if _, err := c.Watch(t.Context(), prefix, 0); !errors.Is(err, cache.ErrStopped) {
		t.Fatalf("Watch after stop: %v", err)
	}
}

// BenchmarkCacheWatchFanout measures one write reaching 1000 cache watchers.
func BenchmarkCacheWatchFanout(b *testing.B) {
	s := newStore(b, memory.Options{})
	c := start(b, s, cache.Options{})
	chans := make([]<-chan storage.Event, 1000)
	for i := range chans {
		ch, err := c.Watch(b.Context(), prefix, 0)
		if err != nil {
			b.Fatal(err)
		}
		chans[i] = ch
	}
	rev := create(b, s, prefix+"ns/pod", "v")
	for _, ch := range chans {
		<-ch
	}
	val := make([]byte, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if rev, err = s.Update(b.Context(), prefix+"ns/pod", val, rev); err != nil {
			b.Fatal(err)
		}
		for _, ch := range chans {
			if ev := <-ch; ev.Revision != rev {
				b.Fatalf("got %+v, want revision %d", ev, rev)
			}
		}
	}
}
