package reconcile

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/workqueue"
)

// The work queues' and leader elections' metrics, by upstream's names and
// labels (client-go's workqueue and leaderelection metrics as the
// controller manager and scheduler export them): every queue NewQueue or
// NewClockQueue made in the process reports under its name. A server registers
// Metrics with its /metrics.
var (
	queueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "depth",
		Help: "Current depth of workqueue"}, []string{"name"})
	queueAdds = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total",
		Help: "Total number of adds handled by workqueue"}, []string{"name"})
	queueLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds",
		Help: "How long in seconds an item stays in workqueue before being requested.", Buckets: prometheus.ExponentialBuckets(10e-9, 10, 10)},
		[]string{"name"})
	queueWork = prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "work_duration_seconds",
		Help: "How long in seconds processing an item from workqueue takes.", Buckets: prometheus.ExponentialBuckets(10e-9, 10, 10)},
		[]string{"name"})
	queueUnfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "unfinished_work_seconds",
		Help: "How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases."},
		[]string{"name"})
	queueLongest = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "longest_running_processor_seconds",
		Help: "How many seconds has the longest running processor for workqueue been running."}, []string{"name"})
	queueRetries = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "retries_total",
		Help: "Total number of retries handled by workqueue"}, []string{"name"})

	leaderStatus = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "leader_election", Name: "master_status",
		Help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name."},
		[]string{"name"})
	leaderSlowpath = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "leader_election", Name: "slowpath_total",
		Help: "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name."},
		[]string{"name"})
)

// Metrics are the collectors of this package — the queues', the leader
// elections' and Panics — for a server's /metrics.
var Metrics = []prometheus.Collector{queueDepth, queueAdds, queueLatency, queueWork, queueUnfinished, queueLongest, queueRetries,
	leaderStatus, leaderSlowpath, Panics}

// client-go's leader election takes one provider per process. (Its work
// queues take one too, but a library plainkube links sets it first:
// NewQueue gives each queue queueMetrics instead.)
func init() {
	leaderelection.SetProvider(leaderMetrics{})
}

// queueMetrics gives client-go's work queues the collectors above.
type queueMetrics struct{}

func (queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return queueDepth.WithLabelValues(name)
}
func (queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return queueAdds.WithLabelValues(name)
}
func (queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return queueLatency.WithLabelValues(name)
}
func (queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return queueWork.WithLabelValues(name)
}
func (queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return queueUnfinished.WithLabelValues(name)
}
func (queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return queueLongest.WithLabelValues(name)
}
func (queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return queueRetries.WithLabelValues(name)
}

// leaderMetrics gives client-go's leader election the collectors above.
type leaderMetrics struct{}

func (leaderMetrics) NewLeaderMetric() leaderelection.LeaderMetric { return leaderMetrics{} }
func (leaderMetrics) On(name string)                               { leaderStatus.WithLabelValues(name).Set(1) }
func (leaderMetrics) Off(name string)                              { leaderStatus.WithLabelValues(name).Set(0) }
func (leaderMetrics) SlowpathExercised(name string)                { leaderSlowpath.WithLabelValues(name).Inc() }
