package reconcile

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestQueueMetrics: a queue NewQueue makes reports under its name in the
// workqueue_* metrics the server exports (not in a library's registry).
func TestQueueMetrics(t *testing.T) {
	q := NewQueue[string]("test_queue_metrics")
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	if got := testutil.ToFloat64(queueAdds.WithLabelValues("test_queue_metrics")); got != 2 {
		t.Fatalf("workqueue_adds_total = %v, want 2", got)
	}
	if got := testutil.ToFloat64(queueDepth.WithLabelValues("test_queue_metrics")); got != 2 {
		t.Fatalf("workqueue_depth = %v, want 2", got)
	}
}
