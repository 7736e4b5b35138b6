package server

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/api/stats"
)

// Metrics are the agent's Prometheus metrics, served on /metrics, with
// upstream kubelet's names: kubelet_node_name, kubelet_running_pods,
// kubelet_running_containers{container_state}, kubelet_pod_start_duration_seconds,
// kubelet_pod_worker_duration_seconds{operation_type="sync"} and
// kubelet_pod_sync_errors_total, plus the Go runtime's go_* and the
// process's process_* metrics.
type Metrics struct {
	reg      *prometheus.Registry
	podStart prometheus.Histogram
	worker   *prometheus.HistogramVec
	errors   prometheus.Counter

	mu        sync.Mutex
	firstSeen map[types.UID]time.Time
}

// podStartBuckets are upstream's for kubelet_pod_start_duration_seconds.
var podStartBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

// NewMetrics makes the metrics of node; pods lists the pods the agent runs
// (their statuses give the running pod and container counts at each
// scrape; nil: those gauges are left out).
func NewMetrics(node string, pods func() []corev1.Pod) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		podStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pod_start_duration_seconds",
			Help:    "Duration in seconds from the agent seeing a pod for the first time to the pod starting to run",
			Buckets: podStartBuckets,
		}),
		worker: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pod_worker_duration_seconds",
			Help:    "Duration in seconds to sync a single pod, by operation type",
			Buckets: prometheus.DefBuckets,
		}, []string{"operation_type"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "pod_sync_errors_total",
			Help: "Number of pod syncs that ended in an error",
		}),
		firstSeen: map[types.UID]time.Time{},
	}
	m.reg.MustRegister(m.podStart, m.worker, m.errors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "node_name", Help: "The node's name. The count is always 1.",
			ConstLabels: prometheus.Labels{"node": node},
		}, func() float64 { return 1 }))
	if pods != nil {
		m.reg.MustRegister(podCounts{pods})
	}
	return m
}

// Registerer is where other components of the node (the service proxy)
// add their metrics, so that /metrics serves them too.
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// PodSeen notes when the agent first saw a pod that has not started.
func (m *Metrics) PodSeen(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.firstSeen[uid]; !ok {
		m.firstSeen[uid] = time.Now()
	}
}

// PodRunning observes a pod's start latency when it first runs.
func (m *Metrics) PodRunning(uid types.UID) {
	m.mu.Lock()
	seen, ok := m.firstSeen[uid]
	delete(m.firstSeen, uid)
	m.mu.Unlock()
	if ok {
		m.podStart.Observe(time.Since(seen).Seconds())
	}
}

// Forget drops what is kept of a pod that is gone.
func (m *Metrics) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.firstSeen, uid)
}

// ObserveSync records one pod sync.
func (m *Metrics) ObserveSync(d time.Duration, err error) {
	m.worker.WithLabelValues("sync").Observe(d.Seconds())
	if err != nil {
		m.errors.Inc()
	}
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// podCounts counts the running pods and the containers by state at each
// scrape.
type podCounts struct{ pods func() []corev1.Pod }

var (
	runningPodsDesc       = prometheus.NewDesc("kubelet_running_pods", "Number of pods that have a running pod sandbox", nil, nil)
	runningContainersDesc = prometheus.NewDesc("kubelet_running_containers", "Number of containers currently running", []string{"container_state"}, nil)
)

func (podCounts) Describe(ch chan<- *prometheus.Desc) {
	ch <- runningPodsDesc
	ch <- runningContainersDesc
}

func (c podCounts) Collect(ch chan<- prometheus.Metric) {
	running := 0
	states := map[string]int{"running": 0, "exited": 0, "created": 0, "unknown": 0}
	for _, p := range c.pods() {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			switch {
			case cs.State.Running != nil:
				states["running"]++
			case cs.State.Terminated != nil:
				states["exited"]++
			case cs.ContainerID != "":
				states["created"]++
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(runningPodsDesc, prometheus.GaugeValue, float64(running))
	for state, n := range states {
		ch <- prometheus.MustNewConstMetric(runningContainersDesc, prometheus.GaugeValue, float64(n), state)
	}
}

// metrics serves /metrics and /metrics/resource.
func (h *Handler) metrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/metrics":
		if h.Metrics == nil {
			http.Error(w, "this agent keeps no metrics", http.StatusNotImplemented)
			return
		}
		h.Metrics.Handler().ServeHTTP(w, r)
	case "/metrics/resource":
		reg := prometheus.NewRegistry()
		reg.MustRegister(resourceMetrics{h.Summary})
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	default:
		http.Error(w, r.URL.Path+" is not served by this agent (it serves /metrics and /metrics/resource)", http.StatusNotFound)
	}
}

// resourceMetrics is /metrics/resource, upstream's resource metrics
// endpoint, from the usage summary: node, pod and container CPU time and
// working-set memory, container start times, and scrape_error (1 when no
// summary could be had).
type resourceMetrics struct {
	summary func() (*stats.Summary, error)
}

var (
	nodeCPUDesc      = prometheus.NewDesc("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemDesc      = prometheus.NewDesc("node_memory_working_set_bytes", "Current working set of the node in bytes", nil, nil)
	podCPUDesc       = prometheus.NewDesc("pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds", []string{"namespace", "pod"}, nil)
	podMemDesc       = prometheus.NewDesc("pod_memory_working_set_bytes", "Current working set of the pod in bytes", []string{"namespace", "pod"}, nil)
	containerCPUDesc = prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	containerMemDesc = prometheus.NewDesc("container_memory_working_set_bytes", "Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	containerStart   = prometheus.NewDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	scrapeErrorDesc  = prometheus.NewDesc("scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

func (resourceMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUDesc, nodeMemDesc, podCPUDesc, podMemDesc, containerCPUDesc, containerMemDesc, containerStart, scrapeErrorDesc} {
		ch <- d
	}
}

func (m resourceMetrics) Collect(ch chan<- prometheus.Metric) {
	var s *stats.Summary
	var err error
	if m.summary == nil {
		err = errNoSummary
	} else {
		s, err = m.summary()
	}
	if err != nil || s == nil {
		ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, 0)
	emit := func(desc *prometheus.Desc, kind prometheus.ValueType, at time.Time, v float64, labels ...string) {
		ch <- prometheus.NewMetricWithTimestamp(at, prometheus.MustNewConstMetric(desc, kind, v, labels...))
	}
	cpuMem := func(cpu *stats.CPUStats, mem *stats.MemoryStats, cpuDesc, memDesc *prometheus.Desc, labels ...string) {
		if cpu != nil && cpu.UsageCoreNanoSeconds != nil {
			emit(cpuDesc, prometheus.CounterValue, cpu.Time.Time, float64(*cpu.UsageCoreNanoSeconds)/1e9, labels...)
		}
		if mem != nil && mem.WorkingSetBytes != nil {
			emit(memDesc, prometheus.GaugeValue, mem.Time.Time, float64(*mem.WorkingSetBytes), labels...)
		}
	}
	cpuMem(s.Node.CPU, s.Node.Memory, nodeCPUDesc, nodeMemDesc)
	for _, p := range s.Pods {
		cpuMem(p.CPU, p.Memory, podCPUDesc, podMemDesc, p.PodRef.Namespace, p.PodRef.Name)
		for _, c := range p.Containers {
			cpuMem(c.CPU, c.Memory, containerCPUDesc, containerMemDesc, c.Name, p.PodRef.Name, p.PodRef.Namespace)
			if !c.StartTime.IsZero() {
				ch <- prometheus.MustNewConstMetric(containerStart, prometheus.GaugeValue, float64(c.StartTime.UnixNano())/1e9, c.Name, p.PodRef.Name, p.PodRef.Namespace)
			}
		}
	}
}
