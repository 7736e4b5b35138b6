package proxy

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are upstream kube-proxy's, by name: how long a sync takes, and
// how long from an EndpointSlice change (its last-change-trigger-time) to
// its rules being in place.
type metrics struct {
	syncDuration prometheus.Histogram
	programming  prometheus.Histogram
	lastSync     prometheus.Gauge
	fullSyncs    prometheus.Counter
	partialSyncs prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_duration_seconds",
			Help:    "SyncProxyRules latency in seconds",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		programming: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubeproxy", Name: "network_programming_duration_seconds",
			Help: "In Cluster Network Programming Latency in seconds",
			Buckets: []float64{0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
				11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
				36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60,
				65, 70, 75, 80, 85, 90, 95, 100, 105, 110, 115, 120, 150, 180, 210, 240, 270, 300},
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "kubeproxy", Name: "sync_proxy_rules_last_timestamp_seconds",
			Help: "The last time proxy rules were successfully synced",
		}),
		fullSyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubeproxy", Name: "sync_full_proxy_rules_total",
			Help: "Number of syncs that rewrote the whole table",
		}),
		partialSyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubeproxy", Name: "sync_partial_proxy_rules_total",
			Help: "Number of syncs that rewrote only changed Services",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.syncDuration, m.programming, m.lastSync, m.fullSyncs, m.partialSyncs)
	}
	return m
}

// observeSync records one successful sync that took d, finished at done,
// programming the EndpointSlice changes made at triggers.
func (m *metrics) observeSync(d time.Duration, full bool, triggers []time.Time, done time.Time) {
	m.syncDuration.Observe(d.Seconds())
	m.lastSync.Set(float64(done.UnixNano()) / 1e9)
	if full {
		m.fullSyncs.Inc()
	} else {
		m.partialSyncs.Inc()
	}
	for _, t := range triggers {
		if lat := done.Sub(t); lat >= 0 {
			m.programming.Observe(lat.Seconds())
		}
	}
}
