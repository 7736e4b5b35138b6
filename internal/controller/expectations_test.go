package controller

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func TestExpectations(t *testing.T) {
	now := t0
	e := NewExpectations(func() time.Time { return now })
	const k = "ns/rs"
	if !e.Satisfied(k) {
		t.Fatal("no expectations should be satisfied")
	}
	e.ExpectCreations(k, 2)
	if e.Satisfied(k) {
		t.Fatal("two creates pending")
	}
	e.CreationObserved(k)
	if e.Satisfied(k) {
		t.Fatal("one create pending")
	}
	e.CreationObserved(k)
	if !e.Satisfied(k) {
		t.Fatal("all creates seen")
	}

	e.ExpectDeletions(k, []string{"ns/a", "ns/b"})
	e.DeletionObserved(k, "ns/a")
	e.DeletionObserved(k, "ns/a") // counted once
	e.DeletionObserved(k, "ns/other")
	if e.Satisfied(k) {
		t.Fatal("ns/b's deletion pending")
	}
	now = now.Add(ExpectationsTimeout + time.Second)
	if !e.Satisfied(k) {
		t.Fatal("expectations should expire")
	}
	e.ExpectCreations(k, 1)
	e.Forget(k)
	if !e.Satisfied(k) {
		t.Fatal("forgotten expectations should be satisfied")
	}
}

func TestExpectCreationsAndDeletions(t *testing.T) {
	e := NewExpectations(func() time.Time { return t0 })
	const k = "ns/ds"
	e.ExpectCreations(k, 5)
	// Expect replaces what was expected; a key named twice is one deletion.
	e.Expect(k, 1, []string{"ns/a", "ns/a", "ns/b"})
	e.CreationObserved(k)
	e.DeletionObserved(k, "ns/a")
	if e.Satisfied(k) {
		t.Fatal("ns/b's deletion pending")
	}
	e.DeletionObserved(k, "ns/b")
	if !e.Satisfied(k) {
		t.Fatal("the creation and both deletions were seen")
	}
	pods := []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}}
	if got := ObjectKeys(pods); len(got) != 2 || got[0] != "ns/a" || got[1] != "ns/b" {
		t.Fatalf("ObjectKeys = %v", got)
	}
}

func TestSlowStart(t *testing.T) {
	tests := []struct {
		count, failAt int // failAt: the call number (1-based) that fails; 0 none
		wantOK        int
		wantCalls     int
	}{
		{count: 0, wantOK: 0, wantCalls: 0},
		{count: 10, wantOK: 10, wantCalls: 10},
		// Batches 1, 2, 4: the call that fails is in the batch of 2.
		{count: 10, failAt: 2, wantOK: 2, wantCalls: 3},
		{count: 10, failAt: 1, wantOK: 0, wantCalls: 1},
		// Batches 1, 2, 4, 3: fails in the batch of 4.
		{count: 10, failAt: 5, wantOK: 6, wantCalls: 7},
	}
	for _, tt := range tests {
		var calls atomic.Int32
		ok, skipped, err := SlowStart(tt.count, func(int) error {
			if n := calls.Add(1); int(n) == tt.failAt {
				return errors.New("boom")
			}
			return nil
		})
		if ok != tt.wantOK || ok+skipped > tt.count || int(calls.Load()) != tt.wantCalls || (err != nil) != (tt.failAt != 0) {
			t.Errorf("count %d failAt %d: ok=%d calls=%d err=%v; want ok=%d calls=%d", tt.count, tt.failAt, ok, calls.Load(), err, tt.wantOK, tt.wantCalls)
		}
	}
}

func TestUIDExpectations(t *testing.T) {
	e := NewUIDExpectations()
	const k = "ns/job"
	e.Expect(k, []types.UID{"a", "b"})
	if got := e.Pending(k); len(got) != 2 || !got["a"] || !got["b"] {
		t.Fatalf("pending %v, want a and b", got)
	}
	e.Observed(k, "a")
	e.Observed(k, "z") // never expected: nothing happens
	if got := e.Pending(k); len(got) != 1 || !got["b"] {
		t.Fatalf("pending %v, want b", got)
	}
	p := e.Pending(k)
	p["c"] = true // a copy
	if e.Pending(k)["c"] {
		t.Fatal("Pending returned the map itself")
	}
	e.Forget(k)
	if got := e.Pending(k); len(got) != 0 {
		t.Fatalf("pending %v after Forget", got)
	}
}
