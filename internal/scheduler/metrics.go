package scheduler

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/queue"
)

// The result label of the attempt metrics, as upstream's.
const (
	resultScheduled     = "scheduled"
	resultUnschedulable = "unschedulable"
	resultError         = "error"
)

// metrics are upstream kube-scheduler's, by name and labels: each
// scheduling attempt's result and duration (from taking the pod off the
// queue to its binding, or to the failure), each extension point's
// duration, each plugin's (in one cycle of ten), and how many pods wait in
// each part of the queue.
type metrics struct {
	attempts        *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	extensionPoints *prometheus.HistogramVec
	plugins         *prometheus.HistogramVec
	pending         *prometheus.Desc
	queue           *queue.Queue // set once the scheduler has made it
}

func newMetrics() *metrics {
	return &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "scheduler", Name: "schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem."},
			[]string{"result", "profile"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "scheduler", Name: "scheduling_attempt_duration_seconds",
			Help: "Scheduling attempt latency in seconds (scheduling algorithm + binding)", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)},
			[]string{"result", "profile"}),
		extensionPoints: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "scheduler", Name: "framework_extension_point_duration_seconds",
			Help: "Latency for running all plugins of a specific extension point.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 12)},
			[]string{"extension_point", "status", "profile"}),
		plugins: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "scheduler", Name: "plugin_execution_duration_seconds",
			Help: "Duration for running a plugin at a specific extension point.", Buckets: prometheus.ExponentialBuckets(0.00001, 1.5, 20)},
			[]string{"plugin", "extension_point", "status"}),
		pending: prometheus.NewDesc("scheduler_pending_pods",
			"Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated.",
			[]string{"queue"}, nil),
	}
}

// register adds the metrics to reg, in place of an earlier scheduler's (a
// component that was restarted).
func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.attempts, m.duration, m.extensionPoints, m.plugins, m} {
		err := reg.Register(c)
		var earlier prometheus.AlreadyRegisteredError
		if errors.As(err, &earlier) {
			reg.Unregister(earlier.ExistingCollector)
			err = reg.Register(c)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// attempt records one attempt's result.
func (m *metrics) attempt(profile, result string, start time.Time) {
	m.attempts.WithLabelValues(result, profile).Inc()
	m.duration.WithLabelValues(result, profile).Observe(time.Since(start).Seconds())
}

// extensionPoint records one run of an extension point's plugins
// (framework.ExtensionPointObserver).
func (m *metrics) extensionPoint(profile, point string, code framework.Code, took time.Duration) {
	m.extensionPoints.WithLabelValues(point, code.String(), profile).Observe(took.Seconds())
}

// plugin records one plugin's run in a sampled cycle
// (framework.PluginObserver).
func (m *metrics) plugin(plugin, point string, code framework.Code, took time.Duration) {
	m.plugins.WithLabelValues(plugin, point, code.String()).Observe(took.Seconds())
}

// Describe and Collect make the pending pods a collector that reads the
// queue when scraped.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.pending }

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	active, backoff, unschedulable, gated := m.queue.Counts()
	for q, n := range map[string]int{"active": active, "backoff": backoff, "unschedulable": unschedulable, "gated": gated} {
		ch <- prometheus.MustNewConstMetric(m.pending, prometheus.GaugeValue, float64(n), q)
	}
}
