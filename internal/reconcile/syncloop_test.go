package reconcile

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestSyncLoop: a sync at start, one after a Poke, retries after a failure
// (each told to Failed), and OnResync before the periodic sync.
func TestSyncLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var syncs, failures, resyncs atomic.Int32
	kick := NewKick()
	fail := atomic.Bool{}
	done := make(chan struct{})
	go func() {
		SyncLoop{
			Sync: func(context.Context) error {
				syncs.Add(1)
				if fail.Load() {
					return errors.New("boom")
				}
				return nil
			},
			Failed:     func(error) { failures.Add(1) },
			OnResync:   func() { resyncs.Add(1) },
			Period:     time.Hour,
			MinBackoff: time.Millisecond,
		}.Run(ctx, kick)
		close(done)
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: syncs %d, failures %d", what, syncs.Load(), failures.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("the first sync", func() bool { return syncs.Load() == 1 })
	kick.Poke()
	waitFor("a sync after Poke", func() bool { return syncs.Load() == 2 })
	fail.Store(true)
	kick.Poke()
	waitFor("retries after failures", func() bool { return failures.Load() >= 3 })
	fail.Store(false)
	n := failures.Load()
	time.Sleep(50 * time.Millisecond)
	if failures.Load() > n+1 || resyncs.Load() != 0 {
		t.Fatalf("after a success: failures %d -> %d, resyncs %d", n, failures.Load(), resyncs.Load())
	}
	cancel()
	<-done
}
