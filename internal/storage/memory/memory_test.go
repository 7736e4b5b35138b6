package memory_test

import (
	"errors"
	"fmt"
	"testing"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/memory"
	"plainkube.dev/plainkube/internal/storage/storagetest"
)

func TestSuite(t *testing.T) {
	storagetest.RunSuite(t, func(t *testing.T) storage.Interface {
		s := memory.New(memory.Options{})
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func BenchmarkMemoryCreate(b *testing.B) {
	s := memory.New(memory.Options{})
	defer s.Close()
	ctx := b.Context()
	val := make([]byte, 1024)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Create(ctx, fmt.Sprintf("/registry/pods/default/pod-%09d", i), val); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// TestHistoryLimit: only the last History changes are kept.
func TestHistoryLimit(t *testing.T) {
	s := memory.New(memory.Options{History: 3})
	defer s.Close()
	ctx := t.Context()
	var revs []int64
	for i := range 6 {
		r, err := s.Create(ctx, fmt.Sprintf("/h/%d", i), []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, r)
	}
	// Kept: the changes at revs[3..5], so the state at revs[2] is still known.
	if _, err := s.List(ctx, "/h/", storage.ListOptions{Revision: revs[1]}); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("List past the history: %v, want ErrCompacted", err)
	}
	res, err := s.List(ctx, "/h/", storage.ListOptions{Revision: revs[2]})
	if err != nil || len(res.Items) != 3 {
		t.Fatalf("List at the oldest kept state = %+v, %v", res, err)
	}
	ch, err := s.Watch(ctx, "/h/", revs[1])
	if err != nil {
		t.Fatal(err)
	}
	if ev := storagetest.Next(t, ch); ev.Type != storage.EventError || !errors.Is(ev.Err, storage.ErrCompacted) {
		t.Fatalf("Watch past the history: %+v, want EventError(ErrCompacted)", ev)
	}
	storagetest.ExpectClosed(t, ch)
}

// TestSlowWatcher: a watcher that does not read never blocks writers; once
// the history it needs is gone it ends with ErrCompacted.
func TestSlowWatcher(t *testing.T) {
	s := memory.New(memory.Options{History: 8})
	defer s.Close()
	ctx := t.Context()
	slow, err := s.Watch(ctx, "/s/", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 { // far more than the watcher's buffer and the history
		if _, err := s.Create(ctx, fmt.Sprintf("/s/%03d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	last := int64(0)
	for {
		ev := storagetest.Next(t, slow)
		if ev.Type == storage.EventError {
			if !errors.Is(ev.Err, storage.ErrCompacted) {
				t.Fatalf("slow watcher ended with %v", ev.Err)
			}
			break
		}
		if ev.Revision != last+1 && last != 0 {
			t.Fatalf("slow watcher skipped from %d to %d", last, ev.Revision)
		}
		last = ev.Revision
	}
	storagetest.ExpectClosed(t, slow)
}

func TestClose(t *testing.T) {
	s := memory.New(memory.Options{})
	ch, err := s.Watch(t.Context(), "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	storagetest.ExpectClosed(t, ch)
	if _, err := s.Create(t.Context(), "/a", nil); !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("Create after Close: %v", err)
	}
}
