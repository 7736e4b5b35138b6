package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/storage"
)

// Timeout bounds every wait for a watch event.
const Timeout = 10 * time.Second

// RunSuite runs the shared contract tests, each as a subtest on a fresh store
// from newStore. newStore should register its own cleanup (t.Cleanup).
func RunSuite(t *testing.T, newStore func(t *testing.T) storage.Interface) {
	tests := []struct {
		name string
		run  func(t *testing.T, s storage.Interface)
	}{
		{"CreateGet", testCreateGet},
		{"GetNotFound", testGetNotFound},
		{"UpdateCAS", testUpdateCAS},
		{"Delete", testDelete},
		{"ListOrderAndPrefix", testListOrderAndPrefix},
		{"ListPastRevision", testListPastRevision},
		{"ListPaging", testListPaging},
		{"RevisionsIncrease", testRevisionsIncrease},
		{"WatchFromNow", testWatchFromNow},
		{"WatchFromPast", testWatchFromPast},
		{"WatchPrefixIsolation", testWatchPrefixIsolation},
		{"WatchSingleKey", testWatchSingleKey},
		{"Compaction", testCompaction},
		{"FutureRevision", testFutureRevision},
		{"ConcurrentCAS", testConcurrentCAS},
		{"WatchClosesOnCancel", testWatchClosesOnCancel},
		{"WatchProgress", testWatchProgress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, newStore(t))
		})
	}
}

func testCreateGet(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	val := []byte("v1")
	rev := mustCreate(t, s, "/r/a", string(val))
	val[0] = 'X' // the store must have kept its own copy
	kv, err := s.Get(ctx, "/r/a")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := storage.KeyValue{Key: "/r/a", Value: []byte("v1"), CreateRevision: rev, ModRevision: rev}
	checkKV(t, kv, want)
	if _, err := s.Create(ctx, "/r/a", []byte("v2")); !errors.Is(err, storage.ErrKeyExists) {
		t.Fatalf("second Create: got %v, want ErrKeyExists", err)
	}
	cur, err := s.CurrentRevision(ctx)
	if err != nil || cur != rev {
		t.Fatalf("CurrentRevision = %d, %v; want %d (a failed Create must not bump it)", cur, err, rev)
	}
}

func testGetNotFound(t *testing.T, s storage.Interface) {
	if _, err := s.Get(t.Context(), "/r/missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get: got %v, want ErrNotFound", err)
	}
}

func testUpdateCAS(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	rev1 := mustCreate(t, s, "/r/a", "v1")
	rev2, err := s.Update(ctx, "/r/a", []byte("v2"), rev1)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if rev2 <= rev1 {
		t.Fatalf("Update revision %d not after %d", rev2, rev1)
	}
	kv, err := s.Get(ctx, "/r/a")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	checkKV(t, kv, storage.KeyValue{Key: "/r/a", Value: []byte("v2"), CreateRevision: rev1, ModRevision: rev2})

	if _, err := s.Update(ctx, "/r/a", []byte("v3"), rev1); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale Update: got %v, want ErrConflict", err)
	}
	if _, err := s.Update(ctx, "/r/a", []byte("v3"), 0); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Update with revision 0: got %v, want ErrConflict", err)
	}
	if _, err := s.Update(ctx, "/r/missing", []byte("v"), rev2); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Update of missing key: got %v, want ErrNotFound", err)
	}
	if _, err := s.Update(ctx, "/r/missing", []byte("v"), 0); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Update of missing key at 0: got %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "/r/missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("failed Update created the key: %v", err)
	}
	kv, _ = s.Get(ctx, "/r/a")
	if string(kv.Value) != "v2" {
		t.Fatalf("failed Update changed the value to %q", kv.Value)
	}
}

func testDelete(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	rev1 := mustCreate(t, s, "/r/a", "v1")
	rev2 := mustUpdate(t, s, "/r/a", "v2", rev1)
	if _, _, err := s.Delete(ctx, "/r/a", rev1); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale Delete: got %v, want ErrConflict", err)
	}
	kv, drev, err := s.Delete(ctx, "/r/a", rev2)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	checkKV(t, kv, storage.KeyValue{Key: "/r/a", Value: []byte("v2"), CreateRevision: rev1, ModRevision: rev2})
	if drev <= rev2 {
		t.Fatalf("Delete revision %d not after %d", drev, rev2)
	}
	if _, err := s.Get(ctx, "/r/a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get after Delete: got %v, want ErrNotFound", err)
	}
	if _, _, err := s.Delete(ctx, "/r/a", 0); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Delete of missing key: got %v, want ErrNotFound", err)
	}
	if _, _, err := s.Delete(ctx, "/r/a", drev); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Delete of missing key with revision: got %v, want ErrNotFound", err)
	}

	// Unconditional delete, and re-create gets a fresh CreateRevision.
	rev3 := mustCreate(t, s, "/r/a", "v3")
	if rev3 <= drev {
		t.Fatalf("re-create revision %d not after delete %d", rev3, drev)
	}
	kv, drev2, err := s.Delete(ctx, "/r/a", 0)
	if err != nil {
		t.Fatalf("unconditional Delete: %v", err)
	}
	checkKV(t, kv, storage.KeyValue{Key: "/r/a", Value: []byte("v3"), CreateRevision: rev3, ModRevision: rev3})
	if cur, _ := s.CurrentRevision(ctx); cur != drev2 {
		t.Fatalf("CurrentRevision = %d, want %d", cur, drev2)
	}
}

func testListOrderAndPrefix(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	for _, k := range []string{"/a/c", "/ab/x", "/a/a", "/a", "/b/a", "/a/b/deep", "/a/b"} {
		mustCreate(t, s, k, "v"+k)
	}
	res, err := s.List(ctx, "/a/", storage.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	checkKeys(t, res.Items, "/a/a", "/a/b", "/a/b/deep", "/a/c")
	for _, kv := range res.Items {
		if string(kv.Value) != "v"+kv.Key {
			t.Errorf("%s: value %q", kv.Key, kv.Value)
		}
	}
	if res.More || res.RemainingCount != 0 {
		t.Errorf("More=%v RemainingCount=%d, want false, 0", res.More, res.RemainingCount)
	}
	cur, _ := s.CurrentRevision(ctx)
	if res.Revision != cur {
		t.Errorf("List revision %d, want current %d", res.Revision, cur)
	}
	res, err = s.List(ctx, "/zz/", storage.ListOptions{})
	if err != nil || len(res.Items) != 0 || res.Revision != cur {
		t.Fatalf("empty List = %+v, %v", res, err)
	}
}

func testListPastRevision(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	r1 := mustCreate(t, s, "/p/a", "a1")
	r2 := mustCreate(t, s, "/p/b", "b1")
	r3 := mustUpdate(t, s, "/p/a", "a2", r1)
	_, r4, err := s.Delete(ctx, "/p/b", 0)
	if err != nil {
		t.Fatal(err)
	}
	r5 := mustCreate(t, s, "/p/c", "c1")
	mustCreate(t, s, "/other/x", "x")

	tests := []struct {
		rev  int64
		want []storage.KeyValue
	}{
		{r1, []storage.KeyValue{{Key: "/p/a", Value: []byte("a1"), CreateRevision: r1, ModRevision: r1}}},
		{r2, []storage.KeyValue{
			{Key: "/p/a", Value: []byte("a1"), CreateRevision: r1, ModRevision: r1},
			{Key: "/p/b", Value: []byte("b1"), CreateRevision: r2, ModRevision: r2},
		}},
		{r3, []storage.KeyValue{
			{Key: "/p/a", Value: []byte("a2"), CreateRevision: r1, ModRevision: r3},
			{Key: "/p/b", Value: []byte("b1"), CreateRevision: r2, ModRevision: r2},
		}},
		{r4, []storage.KeyValue{{Key: "/p/a", Value: []byte("a2"), CreateRevision: r1, ModRevision: r3}}},
		{r5, []storage.KeyValue{
			{Key: "/p/a", Value: []byte("a2"), CreateRevision: r1, ModRevision: r3},
			{Key: "/p/c", Value: []byte("c1"), CreateRevision: r5, ModRevision: r5},
		}},
	}
	for _, tt := range tests {
		res, err := s.List(ctx, "/p/", storage.ListOptions{Revision: tt.rev})
		if err != nil {
			t.Fatalf("List at %d: %v", tt.rev, err)
		}
		if res.Revision != tt.rev {
			t.Errorf("List at %d: Revision = %d", tt.rev, res.Revision)
		}
		if len(res.Items) != len(tt.want) {
			t.Fatalf("List at %d: got %v, want %v", tt.rev, keysOf(res.Items), keysOf(tt.want))
		}
		for i := range tt.want {
			checkKV(t, res.Items[i], tt.want[i])
		}
	}
	res, err := s.List(ctx, "/p/", storage.ListOptions{Revision: r1 - 1})
	if err != nil || len(res.Items) != 0 {
		t.Fatalf("List before the first write = %+v, %v; want empty", res, err)
	}
}

func testListPaging(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	var want []string
	for i := range 10 {
		k := fmt.Sprintf("/pg/%02d", i)
		want = append(want, k)
		mustCreate(t, s, k, "v")
	}
	mustCreate(t, s, "/pga", "outside")
	first, err := s.List(ctx, "/pg/", storage.ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	rev := first.Revision
	// Writes after the first page must not show in later pages.
	mustCreate(t, s, "/pg/05a", "late")
	if _, _, err := s.Delete(ctx, "/pg/09", 0); err != nil {
		t.Fatal(err)
	}

	var got []string
	res := first
	for page := 0; ; page++ {
		got = append(got, keysOf(res.Items)...)
		wantRemaining := int64(len(want) - len(got))
		if res.More != (wantRemaining > 0) || (res.More && res.RemainingCount != wantRemaining) {
			t.Fatalf("page %d: More=%v RemainingCount=%d, want remaining %d", page, res.More, res.RemainingCount, wantRemaining)
		}
		if res.Revision != rev {
			t.Fatalf("page %d: Revision %d, want %d", page, res.Revision, rev)
		}
		if !res.More {
			break
		}
		if len(res.Items) != 3 {
			t.Fatalf("page %d has %d items, want 3", page, len(res.Items))
		}
		next := res.Items[len(res.Items)-1].Key + "\x00"
		res, err = s.List(ctx, "/pg/", storage.ListOptions{Limit: 3, Revision: rev, StartKey: next})
		if err != nil {
			t.Fatal(err)
		}
	}
	checkStrings(t, got, want)

	// StartKey without a limit, at the latest revision.
	res, err = s.List(ctx, "/pg/", storage.ListOptions{StartKey: "/pg/05"})
	if err != nil {
		t.Fatal(err)
	}
	checkKeys(t, res.Items, "/pg/05", "/pg/05a", "/pg/06", "/pg/07", "/pg/08")
}

func testRevisionsIncrease(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	last, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last < 1 {
		t.Fatalf("empty store at revision %d, want >= 1", last)
	}
	check := func(rev int64) {
		t.Helper()
		if rev <= last {
			t.Fatalf("revision %d not after %d", rev, last)
		}
		last = rev
		if cur, err := s.CurrentRevision(ctx); err != nil || cur != rev {
			t.Fatalf("CurrentRevision = %d, %v; want %d", cur, err, rev)
		}
	}
	for i := range 5 {
		k := fmt.Sprintf("/rv/%d", i)
		r := mustCreate(t, s, k, "a")
		check(r)
		check(mustUpdate(t, s, k, "b", r))
	}
	_, r, err := s.Delete(ctx, "/rv/0", 0)
	if err != nil {
		t.Fatal(err)
	}
	check(r)
}

func testWatchFromNow(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	mustCreate(t, s, "/w/old", "old") // before the watch: not seen
	ch, err := s.Watch(ctx, "/w/", 0)
	if err != nil {
		t.Fatal(err)
	}
	r1 := mustCreate(t, s, "/w/a", "a1")
	r2 := mustUpdate(t, s, "/w/a", "a2", r1)
	_, r3, err := s.Delete(ctx, "/w/a", r2)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.Event{
		{Type: storage.EventPut, Key: "/w/a", Value: []byte("a1"), Revision: r1, IsCreate: true},
		{Type: storage.EventPut, Key: "/w/a", Value: []byte("a2"), PrevValue: []byte("a1"), Revision: r2},
		{Type: storage.EventDelete, Key: "/w/a", PrevValue: []byte("a2"), Revision: r3},
	}
	for _, w := range want {
		checkEvent(t, Next(t, ch), w)
	}
}

func testWatchFromPast(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	r0 := mustCreate(t, s, "/w/before", "x")
	r1 := mustCreate(t, s, "/w/a", "a1")
	r2 := mustCreate(t, s, "/w/b", "b1")
	r3 := mustUpdate(t, s, "/w/a", "a2", r1)
	ch, err := s.Watch(ctx, "/w/", r0)
	if err != nil {
		t.Fatal(err)
	}
	r4 := mustUpdate(t, s, "/w/b", "b2", r2) // live, after the replay
	want := []storage.Event{
		{Type: storage.EventPut, Key: "/w/a", Value: []byte("a1"), Revision: r1, IsCreate: true},
		{Type: storage.EventPut, Key: "/w/b", Value: []byte("b1"), Revision: r2, IsCreate: true},
		{Type: storage.EventPut, Key: "/w/a", Value: []byte("a2"), PrevValue: []byte("a1"), Revision: r3},
		{Type: storage.EventPut, Key: "/w/b", Value: []byte("b2"), PrevValue: []byte("b1"), Revision: r4},
	}
	for _, w := range want {
		checkEvent(t, Next(t, ch), w)
	}
}

func testWatchPrefixIsolation(t *testing.T, s storage.Interface) {
	ch, err := s.Watch(t.Context(), "/a/", 0)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "/ab/x", "no")
	mustCreate(t, s, "/a", "no")
	r := mustCreate(t, s, "/a/x/y", "yes")
	checkEvent(t, Next(t, ch), storage.Event{Type: storage.EventPut, Key: "/a/x/y", Value: []byte("yes"), Revision: r, IsCreate: true})
}

func testWatchSingleKey(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	r0 := mustCreate(t, s, "/k/a", "a0")
	ch, err := s.Watch(ctx, "/k/a", r0)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "/k/ab", "no")
	mustCreate(t, s, "/k/a/child", "no")
	r1 := mustUpdate(t, s, "/k/a", "a1", r0)
	checkEvent(t, Next(t, ch), storage.Event{Type: storage.EventPut, Key: "/k/a", Value: []byte("a1"), PrevValue: []byte("a0"), Revision: r1})
}

func testCompaction(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	r1 := mustCreate(t, s, "/c/a", "1")
	r2 := mustUpdate(t, s, "/c/a", "2", r1)
	r3 := mustUpdate(t, s, "/c/a", "3", r2)
	r4 := mustUpdate(t, s, "/c/a", "4", r3)
	if err := s.Compact(ctx, r3); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if _, err := s.List(ctx, "/c/", storage.ListOptions{Revision: r2}); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("List below the compaction: got %v, want ErrCompacted", err)
	}
	res, err := s.List(ctx, "/c/", storage.ListOptions{Revision: r3})
	if err != nil || len(res.Items) != 1 || string(res.Items[0].Value) != "3" {
		t.Fatalf("List at the compaction revision = %+v, %v", res, err)
	}
	// A watch from r1 needs r2, which is gone.
	ch, err := s.Watch(ctx, "/c/", r1)
	if err != nil {
		t.Fatal(err)
	}
	ev := Next(t, ch)
	if ev.Type != storage.EventError || !errors.Is(ev.Err, storage.ErrCompacted) {
		t.Fatalf("watch from a compacted revision: got %+v, want EventError(ErrCompacted)", ev)
	}
	ExpectClosed(t, ch)
	// A watch from r2 needs r3 onwards, which is kept.
	ch, err = s.Watch(ctx, "/c/", r2)
	if err != nil {
		t.Fatal(err)
	}
	// The value before r3 was compacted: like etcd, a backend may omit it.
	ev = Next(t, ch)
	if len(ev.PrevValue) == 0 {
		ev.PrevValue = []byte("2")
	}
	checkEvent(t, ev, storage.Event{Type: storage.EventPut, Key: "/c/a", Value: []byte("3"), PrevValue: []byte("2"), Revision: r3})
	checkEvent(t, Next(t, ch), storage.Event{Type: storage.EventPut, Key: "/c/a", Value: []byte("4"), PrevValue: []byte("3"), Revision: r4})
	if err := s.Compact(ctx, r3); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("Compact at the same revision again: got %v, want ErrCompacted", err)
	}
	if err := s.Compact(ctx, r4); err != nil {
		t.Fatalf("Compact at the latest revision: %v", err)
	}
	if kv, err := s.Get(ctx, "/c/a"); err != nil || string(kv.Value) != "4" {
		t.Fatalf("Get after Compact = %+v, %v", kv, err)
	}
}

func testFutureRevision(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	mustCreate(t, s, "/f/a", "a")
	cur, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "/f/", storage.ListOptions{Revision: cur + 10}); !errors.Is(err, storage.ErrFutureRevision) {
		t.Fatalf("List in the future: got %v, want ErrFutureRevision", err)
	}
	if err := s.Compact(ctx, cur+10); !errors.Is(err, storage.ErrFutureRevision) {
		t.Fatalf("Compact in the future: got %v, want ErrFutureRevision", err)
	}
	// A watch from a future revision waits for it.
	ch, err := s.Watch(ctx, "/f/", cur+1)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "/f/skipped", "x") // revision cur+1: not after cur+1
	r := mustCreate(t, s, "/f/b", "b")
	checkEvent(t, Next(t, ch), storage.Event{Type: storage.EventPut, Key: "/f/b", Value: []byte("b"), Revision: r, IsCreate: true})
}

func testConcurrentCAS(t *testing.T, s storage.Interface) {
	ctx := t.Context()
	rev := mustCreate(t, s, "/cas/a", "0")
	for round := range 20 {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		revs := make([]int64, 2)
		start := make(chan struct{})
		for i := range 2 {
			wg.Go(func() {
				<-start
				revs[i], errs[i] = s.Update(ctx, "/cas/a", fmt.Appendf(nil, "%d-%d", round, i), rev)
			})
		}
		close(start)
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if won >= 0 {
					t.Fatalf("round %d: both updates won", round)
				}
				won = i
			case !errors.Is(err, storage.ErrConflict):
				t.Fatalf("round %d: loser got %v, want ErrConflict", round, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no update won: %v", round, errs)
		}
		kv, err := s.Get(ctx, "/cas/a")
		if err != nil || kv.ModRevision != revs[won] || string(kv.Value) != fmt.Sprintf("%d-%d", round, won) {
			t.Fatalf("round %d: stored %+v, %v; winner %d at %d", round, kv, err, won, revs[won])
		}
		rev = revs[won]
	}
}

func testWatchClosesOnCancel(t *testing.T, s storage.Interface) {
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := s.Watch(ctx, "/x/", 0)
	if err != nil {
		t.Fatal(err)
	}
	r := mustCreate(t, s, "/x/a", "a")
	checkEvent(t, Next(t, ch), storage.Event{Type: storage.EventPut, Key: "/x/a", Value: []byte("a"), Revision: r, IsCreate: true})
	cancel()
	// Events already buffered may still arrive; the channel must then close.
	deadline := time.After(Timeout)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch channel not closed after cancel")
		}
	}
}

// Next returns the next event from ch, failing the test if none arrives in
// Timeout or ch is closed.
func Next(t testing.TB, ch <-chan storage.Event) storage.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed, want an event")
		}
		return ev
	case <-time.After(Timeout):
		t.Fatal("timed out waiting for a watch event")
	}
	panic("unreachable")
}

// ExpectClosed fails the test unless ch is closed (without further events)
// within Timeout.
func ExpectClosed(t testing.TB, ch <-chan storage.Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("got event %+v, want the channel closed", ev)
		}
	case <-time.After(Timeout):
		t.Fatal("timed out waiting for the watch channel to close")
	}
}

func mustCreate(t *testing.T, s storage.Interface, key, val string) int64 {
	t.Helper()
	rev, err := s.Create(t.Context(), key, []byte(val))
	if err != nil {
		t.Fatalf("Create %s: %v", key, err)
	}
	return rev
}

func mustUpdate(t *testing.T, s storage.Interface, key, val string, rev int64) int64 {
	t.Helper()
	rev, err := s.Update(t.Context(), key, []byte(val), rev)
	if err != nil {
		t.Fatalf("Update %s: %v", key, err)
	}
	return rev
}

func checkKV(t *testing.T, got, want storage.KeyValue) {
	t.Helper()
	if got.Key != want.Key || !bytes.Equal(got.Value, want.Value) ||
		got.CreateRevision != want.CreateRevision || got.ModRevision != want.ModRevision {
		t.Fatalf("got %s, want %s", fmtKV(got), fmtKV(want))
	}
}

func fmtKV(kv storage.KeyValue) string {
	return fmt.Sprintf("{%s %q create=%d mod=%d}", kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision)
}

func checkEvent(t *testing.T, got, want storage.Event) {
	t.Helper()
	if got.Type != want.Type || got.Key != want.Key || !bytes.Equal(got.Value, want.Value) ||
		!bytes.Equal(got.PrevValue, want.PrevValue) || got.Revision != want.Revision ||
		got.IsCreate != want.IsCreate || (got.Err == nil) != (want.Err == nil) {
		t.Fatalf("got event %s, want %s", fmtEvent(got), fmtEvent(want))
	}
}

func fmtEvent(ev storage.Event) string {
	return fmt.Sprintf("{type=%d %s value=%q prev=%q rev=%d create=%v err=%v}",
		ev.Type, ev.Key, ev.Value, ev.PrevValue, ev.Revision, ev.IsCreate, ev.Err)
}

func keysOf(items []storage.KeyValue) []string {
	keys := make([]string, len(items))
	for i, kv := range items {
		keys[i] = kv.Key
	}
	return keys
}

func checkKeys(t *testing.T, items []storage.KeyValue, want ...string) {
	t.Helper()
	checkStrings(t, keysOf(items), want)
}

func checkStrings(t *testing.T, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got keys %q, want %q", got, want)
	}
}

// testWatchProgress: a store that can report progress sends a quiet
// watch an EventProgress at (at least) the revision of a write elsewhere.
func testWatchProgress(t *testing.T, s storage.Interface) {
	pr, ok := s.(storage.ProgressRequester)
	if !ok {
		t.Skip("store does not implement storage.ProgressRequester")
	}
	ctx := t.Context()
	r0 := mustCreate(t, s, "/quiet/a", "a")
	ch, err := s.Watch(ctx, "/quiet/", r0)
	if err != nil {
		t.Fatal(err)
	}
	r1 := mustCreate(t, s, "/busy/b", "b")
	deadline := time.After(Timeout)
	for {
		if err := pr.RequestProgress(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-ch:
			if ev.Type != storage.EventProgress {
				t.Fatalf("quiet watch got %+v, want only progress", ev)
			}
			if ev.Revision >= r1 {
				return
			}
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no progress event at revision %d", r1)
		}
	}
}
