package storage_test

import (
	"context"
	"testing"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/memory"
)

func TestSnapshotRestore(t *testing.T) {
	ctx := context.Background()
	s := memory.New(memory.Options{})
	defer s.Close()
	rev := func(kv storage.KeyValue, err error) int64 {
		if err != nil {
			t.Fatal(err)
		}
		return kv.ModRevision
	}
	must := func(_ int64, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Create(ctx, "/registry/a", []byte("a1")))
	must(s.Create(ctx, "/registry/b", []byte("b1")))
	must(s.Create(ctx, "/registry/c", []byte("c1")))
	snap, err := storage.TakeSnapshot(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	// After the snapshot: a changed, b deleted, d made.
	must(s.Update(ctx, "/registry/a", []byte("a2"), rev(s.Get(ctx, "/registry/a"))))
	if _, _, err := s.Delete(ctx, "/registry/b", 0); err != nil {
		t.Fatal(err)
	}
	must(s.Create(ctx, "/registry/d", []byte("d1")))
	cRev := rev(s.Get(ctx, "/registry/c"))

	if writes, err := snap.Restore(ctx, s); err != nil || writes != 3 {
		t.Fatalf("restore: %d writes, %v; want 3", writes, err)
	}
	if writes, err := snap.Restore(ctx, s); err != nil || writes != 0 {
		t.Fatalf("restoring again: %d writes, %v; want none", writes, err)
	}
	res, err := s.List(ctx, "/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range res.Items {
		got[kv.Key] = string(kv.Value)
	}
	want := map[string]string{"/registry/a": "a1", "/registry/b": "b1", "/registry/c": "c1"}
	if len(got) != len(want) || got["/registry/a"] != "a1" || got["/registry/b"] != "b1" || got["/registry/c"] != "c1" {
		t.Fatalf("restored %v, want %v", got, want)
	}
	if r := rev(s.Get(ctx, "/registry/c")); r != cRev {
		t.Errorf("an unchanged key was written again (revision %d, was %d)", r, cRev)
	}
}
