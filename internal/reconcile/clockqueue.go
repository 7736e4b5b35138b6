package reconcile

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// ClockQueue is a rate-limited workqueue whose AddAfter waits on the
// controller's clock rather than the wall clock, so that a fake clock
// drives every "look again at this time" (deadlines, backoff, TTL) while
// error retries keep their real-time backoff. Of several AddAfter calls
// for one key the earliest wins, as in client-go's delaying queue.
type ClockQueue struct {
	workqueue.TypedRateLimitingInterface[string]
	clk clock.WithDelayedExecution

	mu      sync.Mutex
	waiting map[string]*pending
}

type pending struct {
	at    time.Time
	timer clock.Timer
}

func NewClockQueue(name string, clk clock.WithDelayedExecution) *ClockQueue {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, MetricsProvider: queueMetrics{}})
	return &ClockQueue{TypedRateLimitingInterface: q, clk: clk, waiting: map[string]*pending{}}
}

// AddAfter adds key once d has passed on the controller's clock.
func (q *ClockQueue) AddAfter(key string, d time.Duration) {
	if q.ShuttingDown() {
		return
	}
	if d <= 0 {
		q.Add(key)
		return
	}
	at := q.clk.Now().Add(d)
	q.mu.Lock()
	defer q.mu.Unlock()
	if p, ok := q.waiting[key]; ok {
		if !at.Before(p.at) {
			return
		}
		p.timer.Stop()
	}
	p := &pending{at: at}
	p.timer = q.clk.AfterFunc(d, func() {
		q.mu.Lock()
		if q.waiting[key] == p {
			delete(q.waiting, key)
		}
		q.mu.Unlock()
		q.Add(key)
	})
	q.waiting[key] = p
}

// ShutDown stops the queue and every pending AddAfter.
func (q *ClockQueue) ShutDown() {
	q.mu.Lock()
	for k, p := range q.waiting {
		p.timer.Stop()
		delete(q.waiting, k)
	}
	q.mu.Unlock()
	q.TypedRateLimitingInterface.ShutDown()
}
