package cache

import (
	"errors"
	"fmt"
	"testing"

	"plainkube.dev/plainkube/internal/storage"
)

func put(key, val string, rev int64, create bool) storage.Event {
	return storage.Event{Type: storage.EventPut, Key: key, Value: []byte(val), Revision: rev, IsCreate: create}
}

func del(key string, rev int64) storage.Event {
	return storage.Event{Type: storage.EventDelete, Key: key, Revision: rev}
}

func revs(evs []storage.Event) []int64 {
	var out []int64
	for _, ev := range evs {
		out = append(out, ev.Revision)
	}
	return out
}

func itemsString(items []storage.KeyValue) string {
	s := ""
	for _, kv := range items {
		s += fmt.Sprintf("%s=%s@%d/%d ", kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision)
	}
	return s
}

func TestStateApplyAndList(t *testing.T) {
	s := newState(10)
	s.reset([]storage.KeyValue{{Key: "/p/a/1", Value: []byte("x"), CreateRevision: 3, ModRevision: 4}}, 10)
	for _, ev := range []storage.Event{
		put("/p/b/1", "y", 11, true),
		put("/p/a/1", "x2", 12, false),
		put("/p/a/2", "z", 13, true),
		del("/p/b/1", 14),
		put("/p/a/2", "dup", 13, false), // duplicate from a rewatch: ignored
	} {
		if _, err := s.apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	items, rev := s.list("/p/")
	if got, want := itemsString(items), "/p/a/1=x2@3/12 /p/a/2=z@13/13 "; got != want || rev != 14 {
		t.Fatalf("list = %q at %d, want %q at 14", got, rev, want)
	}
	items, _ = s.list("/p/a/2")
	if got, want := itemsString(items), "/p/a/2=z@13/13 "; got != want {
		t.Fatalf("list of one key = %q, want %q", got, want)
	}
}

func TestStateSince(t *testing.T) {
	s := newState(3)
	s.reset(nil, 10)
	for r := int64(11); r <= 15; r++ {
		key := "/p/a"
		if r%2 == 0 {
			key = "/p/b"
		}
		if _, err := s.apply(put(key, "v", r, false)); err != nil {
			t.Fatal(err)
		}
	}
	// Kept: 13, 14, 15; floor 12.
	tests := []struct {
		prefix    string
		from      int64
		want      []int64
		compacted bool
	}{
		{"/p/", 12, []int64{13, 14, 15}, false},
		{"/p/", 13, []int64{14, 15}, false},
		{"/p/", 15, nil, false},
		{"/p/", 20, nil, false},
		{"/p/a", 12, []int64{13, 15}, false},
		{"/p/b", 12, []int64{14}, false},
		{"/p/", 11, nil, true},
		{"/p/", 0, nil, true},
	}
	for _, tt := range tests {
		got, err := s.since(tt.prefix, tt.from)
		if tt.compacted {
			if !errors.Is(err, storage.ErrCompacted) {
				t.Errorf("since(%q, %d): err %v, want ErrCompacted", tt.prefix, tt.from, err)
			}
			continue
		}
		if err != nil || fmt.Sprint(revs(got)) != fmt.Sprint(tt.want) {
			t.Errorf("since(%q, %d) = %v, %v; want %v", tt.prefix, tt.from, revs(got), err, tt.want)
		}
	}
}

// TestStateConfirm covers a quiet prefix: a list at a newer store revision
// that matches the cache advances it, and events still in flight from before
// that revision are delivered without disturbing the items.
func TestStateConfirm(t *testing.T) {
	s := newState(10)
	s.reset([]storage.KeyValue{{Key: "/p/a", Value: []byte("a"), CreateRevision: 5, ModRevision: 5}}, 10)
	if s.confirm(nil, 20) {
		t.Fatal("confirmed a list that lacks /p/a")
	}
	if s.confirm([]storage.KeyValue{{Key: "/p/a", ModRevision: 7}}, 20) {
		t.Fatal("confirmed a list with a different ModRevision")
	}
	if !s.confirm([]storage.KeyValue{{Key: "/p/a", ModRevision: 5}}, 20) || s.rev != 20 {
		t.Fatalf("confirm failed; rev %d", s.rev)
	}
	if s.confirm([]storage.KeyValue{{Key: "/p/a", ModRevision: 5}}, 15) {
		t.Fatal("confirm moved the revision back")
	}
	// A create and delete of /p/b at 12 and 13 were still in flight.
	for _, ev := range []storage.Event{put("/p/b", "b", 12, true), del("/p/b", 13)} {
		fresh, err := s.apply(ev)
		if err != nil || !fresh {
			t.Fatalf("late event %d: fresh=%v err=%v", ev.Revision, fresh, err)
		}
		if items, rev := s.list("/p/"); len(items) != 1 || rev != 20 {
			t.Fatalf("late event changed the state: %s at %d", itemsString(items), rev)
		}
	}
	got, err := s.since("/p/", 10)
	if err != nil || fmt.Sprint(revs(got)) != "[12 13]" {
		t.Fatalf("since(10) = %v, %v", revs(got), err)
	}
	if fresh, _ := s.apply(put("/p/c", "c", 21, true)); !fresh {
		t.Fatal("event after the confirmed revision not applied")
	}
	if items, rev := s.list("/p/"); len(items) != 2 || rev != 21 {
		t.Fatalf("state = %s at %d", itemsString(items), rev)
	}
}

// TestRingGrowsThenEvicts: the buffer grows as events come, keeps them in
// order across growth and wrap-around, and evicts the oldest once max are
// held.
func TestRingGrowsThenEvicts(t *testing.T) {
	r := newRing(40)
	var evicted []int64
	for rev := int64(1); rev <= 100; rev++ {
		if old, ok := r.push(storage.Event{Revision: rev}); ok {
			evicted = append(evicted, old.Revision)
		}
		if want := min(rev, 40); int64(r.len()) != want {
			t.Fatalf("after %d pushes: len %d, want %d", rev, r.len(), want)
		}
		for i := range r.len() {
			if got, want := r.at(i).Revision, rev-int64(r.len())+1+int64(i); got != want {
				t.Fatalf("after %d pushes: event %d is revision %d, want %d", rev, i, got, want)
			}
		}
	}
	if len(evicted) != 60 || evicted[0] != 1 || evicted[59] != 60 {
		t.Fatalf("evicted %v, want revisions 1 to 60", evicted)
	}
	if len(r.buf) != 40 {
		t.Fatalf("buffer of %d, want it to stop at 40", len(r.buf))
	}
	r.clear()
	if r.len() != 0 || r.buf != nil {
		t.Fatalf("clear left %d events, buffer %d", r.len(), len(r.buf))
	}
}
