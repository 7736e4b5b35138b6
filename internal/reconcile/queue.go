package reconcile

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Result tells ProcessQueue what to do with a key after a reconcile that
// did not fail.
type Result struct {
	// Requeue adds the key back with the queue's rate-limited backoff
	// (without logging an error): "not done yet, look again soon".
	Requeue bool
	// RequeueAfter, if positive, adds the key back after this delay and
	// resets its backoff: "look again at this time".
	RequeueAfter time.Duration
}

// ReconcileFunc converges the state named by key. An error requeues the key
// with rate-limited backoff.
type ReconcileFunc[T comparable] func(ctx context.Context, key T) (Result, error)

// NewQueue is a rate-limited workqueue with client-go's default controller
// rate limiter (per-item exponential backoff 5 ms .. 1000 s, and an overall
// 10 qps token bucket).
func NewQueue[T comparable](name string) workqueue.TypedRateLimitingInterface[T] {
	return NewQueueWithRateLimiter(name, workqueue.DefaultTypedControllerRateLimiter[T]())
}

// NewQueueWithRateLimiter is a rate-limited workqueue with the given limiter.
func NewQueueWithRateLimiter[T comparable](name string, rl workqueue.TypedRateLimiter[T]) workqueue.TypedRateLimitingInterface[T] {
	return namedQueue[T]{workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[T]{Name: name, MetricsProvider: queueMetrics{}}), name}
}

// namedQueue is a workqueue that knows its name (for Panics' loop label).
type namedQueue[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	name string
}

func (q namedQueue[T]) Name() string { return q.name }

// queueName is q's name, if NewQueue made it.
func queueName(q any) string {
	if n, ok := q.(interface{ Name() string }); ok {
		return n.Name()
	}
	return "unnamed-queue"
}

// ProcessQueue runs workers goroutines taking keys from q and reconciling
// them until ctx ends; then it shuts q down and returns once every worker
// has finished its current key.
func ProcessQueue[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], workers int, log *slog.Logger, reconcile ReconcileFunc[T]) {
	if workers < 1 {
		workers = 1
	}
	loop := queueName(q)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for processNext(ctx, q, loop, log, reconcile) {
			}
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

func processNext[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], loop string, log *slog.Logger, reconcile ReconcileFunc[T]) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	res, err := reconcileOnce(ctx, key, loop, log, reconcile)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			log.Warn("reconcile failed; will retry", "key", key, "retries", q.NumRequeues(key), "err", err)
		}
		q.AddRateLimited(key)
	case res.RequeueAfter > 0:
		q.Forget(key)
		q.AddAfter(key, res.RequeueAfter)
	case res.Requeue:
		q.AddRateLimited(key)
	default:
		q.Forget(key)
	}
	return true
}

// reconcileOnce reconciles key; a panic becomes its error.
func reconcileOnce[T comparable](ctx context.Context, key T, loop string, log *slog.Logger, reconcile ReconcileFunc[T]) (res Result, err error) {
	defer Recover(loop, log, &err, "key", key)
	if hook := testHook.Load(); hook != nil {
		(*hook)(loop, key)
	}
	return reconcile(ctx, key)
}

// RunWhenSynced waits for the informers, then runs workers workers of fn
// on q until ctx ends: the Run of a control loop wired by hand rather than
// by controller.Builder (the API server's CRD controllers). It returns
// ctx.Err() if ctx ended before the informers synced.
func RunWhenSynced[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], workers int, log *slog.Logger, fn ReconcileFunc[T], synced ...cache.InformerSynced) error {
	if !WaitForCacheSync(ctx, synced...) {
		return ctx.Err()
	}
	ProcessQueue(ctx, q, workers, log, fn)
	return nil
}
