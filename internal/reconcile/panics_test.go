package reconcile

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"
)

// TestProcessQueueRecoversPanics: a key whose reconcile panics is retried
// with backoff and counted, while the other keys are reconciled and the
// workers keep running.
func TestProcessQueueRecoversPanics(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	q := NewQueueWithRateLimiter("panics-test", workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	before := testutil.ToFloat64(Panics.WithLabelValues("panics-test"))
	var bad, good atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		ProcessQueue(ctx, q, 1, log, func(_ context.Context, key string) (Result, error) {
			if key == "bad" {
				bad.Add(1)
				var m map[string]int
				m["nil map"] = 1 // a real runtime panic
			}
			good.Add(1)
			return Result{}, nil
		})
		close(done)
	}()
	q.Add("bad")
	q.Add("good")
	deadline := time.Now().Add(10 * time.Second)
	for bad.Load() < 3 || good.Load() < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("reconciles: bad %d, good %d", bad.Load(), good.Load())
		}
		time.Sleep(time.Millisecond)
	}
	q.Add("good") // the worker still takes new keys
	for good.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the worker stopped after the panics")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if n := testutil.ToFloat64(Panics.WithLabelValues("panics-test")) - before; n < 3 {
		t.Errorf("recovered panics counted: %v, want >= 3", n)
	}
}

// TestSyncLoopRecoversPanics: a Sync that panics is a failed sync, retried.
func TestSyncLoopRecoversPanics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var syncs atomic.Int32
	failed := make(chan error, 10)
	go SyncLoop{Name: "panicky", Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Period: time.Hour, MinBackoff: time.Millisecond,
		Sync: func(context.Context) error {
			if syncs.Add(1) == 1 {
				panic("first sync")
			}
			return nil
		},
		Failed: func(err error) { failed <- err }}.Run(ctx, NewKick())
	select {
	case err := <-failed:
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "first sync" || len(pe.Stack) == 0 {
			t.Errorf("Failed got %v, want the panic", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the panic was not reported as a failure")
	}
	deadline := time.Now().Add(10 * time.Second)
	for syncs.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no sync after the panic")
		}
		time.Sleep(time.Millisecond)
	}
}
