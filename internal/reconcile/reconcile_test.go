package reconcile

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeController struct {
	runs    atomic.Int32
	workers atomic.Int32
	// failFirst makes the first runs return at once with an error.
	failFirst int32
}

func (f *fakeController) Name() string { return "fake" }

func (f *fakeController) Run(ctx context.Context, workers int) error {
	f.workers.Store(int32(workers))
	if f.runs.Add(1) <= f.failFirst {
		return errors.New("boom")
	}
	<-ctx.Done()
	return nil
}

func TestRunAllRestartsAndStops(t *testing.T) {
	restartBaseDelay, restartMaxDelay = time.Millisecond, 5*time.Millisecond
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	flaky := &fakeController{failFirst: 3}
	steady := &fakeController{}
	done := make(chan struct{})
	go func() {
		RunAll(ctx, flaky, WithWorkers(steady, 7))
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for flaky.runs.Load() < 4 || steady.runs.Load() < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("runs: flaky %d, steady %d", flaky.runs.Load(), steady.runs.Load())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunAll did not return after cancel")
	}
	if flaky.runs.Load() != 4 || steady.runs.Load() != 1 {
		t.Errorf("runs: flaky %d (want 4), steady %d (want 1)", flaky.runs.Load(), steady.runs.Load())
	}
	if flaky.workers.Load() != DefaultWorkers || steady.workers.Load() != 7 {
		t.Errorf("workers: flaky %d, steady %d", flaky.workers.Load(), steady.workers.Load())
	}
}

func TestProcessQueue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	q := NewQueue[string]("test")
	var mu sync.Mutex
	calls := map[string]int{}
	finished := make(chan string, 10)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ProcessQueue(ctx, q, 2, slog.New(slog.NewTextHandler(io.Discard, nil)), func(_ context.Context, key string) (Result, error) {
			mu.Lock()
			calls[key]++
			n := calls[key]
			mu.Unlock()
			switch {
			case key == "fails-twice" && n <= 2:
				return Result{}, errors.New("not yet")
			case key == "later" && n == 1:
				return Result{RequeueAfter: 10 * time.Millisecond}, nil
			case key == "again" && n == 1:
				return Result{Requeue: true}, nil
			}
			finished <- key
			return Result{}, nil
		})
	}()
	for _, k := range []string{"fails-twice", "later", "again", "once"} {
		q.Add(k)
	}
	seen := map[string]bool{}
	timeout := time.After(10 * time.Second)
	for len(seen) < 4 {
		select {
		case k := <-finished:
			seen[k] = true
		case <-timeout:
			t.Fatalf("finished %v", seen)
		}
	}
	cancel()
	<-stopped
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"fails-twice": 3, "later": 2, "again": 2, "once": 1}
	for k, n := range want {
		if calls[k] != n {
			t.Errorf("%s reconciled %d times, want %d", k, calls[k], n)
		}
	}
	if q.NumRequeues("fails-twice") != 0 {
		t.Error("backoff not forgotten after success")
	}
}
