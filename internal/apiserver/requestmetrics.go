package apiserver

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/storage"
)

// metrics are upstream kube-apiserver's request, watch and storage
// metrics, by name and labels, so that the dashboards and alerts written
// for upstream (apiserver_request_total by code, the latency SLOs,
// etcd_request_duration_seconds, apiserver_storage_objects) read them.
type metrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	sliLatency  *prometheus.HistogramVec
	sizes       *prometheus.HistogramVec
	longRunning *prometheus.GaugeVec
	inFlight    *prometheus.GaugeVec
	inQueue     *prometheus.GaugeVec
	// serving and queued are inFlight's and inQueue's series by request
	// kind (byKind), resolved once rather than per request.
	serving, queued byKind
	watchEvents     *prometheus.CounterVec
	etcdLatency     *prometheus.HistogramVec
	etcdTotal       *prometheus.CounterVec
	etcdErrors      *prometheus.CounterVec
	objects         *objectCounts
	seats           seatMetrics
}

// latencyBuckets are upstream's, for requests and storage calls alike.
var latencyBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// Request kinds, the request_kind label of the in-flight and in-queue
// gauges.
const (
	kindReadOnly = "readOnly"
	kindMutating = "mutating"
)

func newMetrics(s *Server) *metrics {
	storageLabels := []string{"operation", "group", "resource"}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "apiserver", Name: "request_total",
			Help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code."},
			[]string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "apiserver", Name: "request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets: latencyBuckets}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}),
		sliLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "apiserver", Name: "request_sli_duration_seconds",
			Help:    "Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component.",
			Buckets: latencyBuckets[2:]}, // upstream's: from 50 ms
			[]string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
		sizes: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "apiserver", Name: "response_sizes",
			Help:    "Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.",
			Buckets: prometheus.ExponentialBuckets(1000, 10, 7)}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "apiserver", Name: "longrunning_requests",
			Help: "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way."},
			[]string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "apiserver", Name: "current_inflight_requests",
			Help: "Number of requests (other than long-running ones) being served, per request kind."}, []string{"request_kind"}),
		inQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "apiserver", Name: "current_inqueue_requests",
			Help: "Number of requests waiting in a priority level's queue for a seat, per request kind."}, []string{"request_kind"}),
		watchEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "apiserver", Name: "watch_events_total",
			Help: "Number of events sent in watch clients"}, []string{"group", "version", "resource"}),
		etcdLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "etcd_request_duration_seconds",
			Help: "Etcd request latency in seconds for each operation and object type.", Buckets: latencyBuckets}, storageLabels),
		etcdTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "etcd_requests_total",
			Help: "Etcd request counts for each operation and object type."}, storageLabels),
		etcdErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "etcd_request_errors_total",
			Help: "Etcd failed request counts for each operation and object type."}, storageLabels),
		objects: &objectCounts{s: s,
			old: prometheus.NewDesc("apiserver_storage_objects", "[DEPRECATED, consider using apiserver_resource_objects instead] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.", []string{"resource"}, nil),
			cur: prometheus.NewDesc("apiserver_resource_objects", "Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.", []string{"group", "resource"}, nil)},
	}
	m.seats = newSeatMetrics(nil)
	if s != nil {
		m.seats.s = s.seats
	}
	m.serving = byKind{readOnly: m.inFlight.WithLabelValues(kindReadOnly), mutating: m.inFlight.WithLabelValues(kindMutating)}
	m.queued = byKind{readOnly: m.inQueue.WithLabelValues(kindReadOnly), mutating: m.inQueue.WithLabelValues(kindMutating)}
	return m
}

// byKind is a gauge's two series, one per request kind.
type byKind struct{ readOnly, mutating prometheus.Gauge }

// of is the series of a request of the kind.
func (g byKind) of(mutating bool) prometheus.Gauge {
	if mutating {
		return g.mutating
	}
	return g.readOnly
}

func (m *metrics) register(reg prometheus.Registerer) {
	reg.MustRegister(m.requests, m.latency, m.sliLatency, m.sizes, m.longRunning, m.inFlight, m.inQueue, m.watchEvents, m.etcdLatency, m.etcdTotal, m.etcdErrors, m.objects, m.seats)
}

// measuredRequest is what the request metrics say of one request.
type measuredRequest struct {
	verb, dryRun, group, version, resource, subresource, scope, component string
	longRunning                                                           bool
}

// connectSubresources are those upstream reports with the verb CONNECT.
var connectSubresources = map[string]bool{"log": true, "exec": true, "portforward": true, "attach": true, "proxy": true}

// measuredPaths are the non-resource paths whose requests are counted
// (the path being their subresource label, as upstream's); other paths
// are not, so that no client can grow the metrics without bound.
var measuredPaths = map[string]bool{"/api": true, "/apis": true, "/healthz": true, "/livez": true, "/readyz": true,
	"/metrics": true, "/version": true, "/openapi/v2": true, "/openapi/v3": true}

// measure maps a request onto upstream's labels: the verb as upstream
// reports it (LIST and WATCH apart from GET, APPLY apart from PATCH,
// CONNECT for the streaming subresources), the scope, and whether the
// request is long-running. ok is false for a request not counted.
func measure(r *http.Request, info requestInfo) (m measuredRequest, ok bool) {
	if !info.IsResource {
		if !measuredPaths[info.Path] {
			return m, false
		}
		return measuredRequest{verb: strings.ToUpper(r.Method), subresource: info.Path}, true
	}
	m = measuredRequest{group: info.Group, version: info.Version, resource: info.Resource, subresource: info.Subresource, component: "apiserver"}
	switch {
	case info.Name != "" || info.Verb == "create":
		m.scope = "resource"
	case info.Namespace != "":
		m.scope = "namespace"
	default:
		m.scope = "cluster"
	}
	switch info.Verb {
	case "watch":
		m.verb, m.longRunning = "WATCH", true
	case "list":
		m.verb = "LIST"
	case "get":
		m.verb = "GET"
	case "create":
		m.verb = "POST"
	case "update":
		m.verb = "PUT"
	case "patch":
		m.verb = "PATCH"
		if r.Header.Get("Content-Type") == string(types.ApplyPatchType) {
			m.verb = "APPLY"
		}
	case "delete", "deletecollection":
		m.verb = "DELETE"
	default:
		m.verb = "other"
	}
	if connectSubresources[info.Subresource] {
		m.verb, m.longRunning = "CONNECT", true
	}
	if strings.Contains(r.URL.RawQuery, "dryRun") {
		values := slices.Clone(r.URL.Query()["dryRun"])
		slices.Sort(values)
		m.dryRun = strings.Join(slices.Compact(values), ",")
	}
	return m, true
}

// requestEnd is what the request metrics record when a request has been
// answered: its code, the bytes of its body, and the time it spent
// waiting on what the SLI leaves out (admission webhooks, a seat).
type requestEnd func(code, size int, excluded time.Duration)

// begin starts measuring a request: it counts it as in flight (or
// long-running) and returns the function that records its end.
func (ms *metrics) begin(m measuredRequest, mutating bool) requestEnd {
	start := time.Now()
	var gauge prometheus.Gauge
	if m.longRunning {
		gauge = ms.longRunning.WithLabelValues(m.verb, m.group, m.version, m.resource, m.subresource, m.scope, m.component)
	} else {
		gauge = ms.serving.of(mutating)
	}
	gauge.Inc()
	return func(code, size int, excluded time.Duration) {
		took := time.Since(start)
		gauge.Dec()
		ms.requests.WithLabelValues(m.verb, m.dryRun, m.group, m.version, m.resource, m.subresource, m.scope, m.component, strconv.Itoa(code)).Inc()
		ms.latency.WithLabelValues(m.verb, m.dryRun, m.group, m.version, m.resource, m.subresource, m.scope, m.component).Observe(took.Seconds())
		// As upstream's: the SLI leaves dry runs out, and sizes are of
		// reads only.
		if m.dryRun == "" {
			ms.sliLatency.WithLabelValues(m.verb, m.group, m.version, m.resource, m.subresource, m.scope, m.component).Observe((took - excluded).Seconds())
		}
		if m.verb == "GET" || m.verb == "LIST" {
			ms.sizes.WithLabelValues(m.verb, m.group, m.version, m.resource, m.subresource, m.scope, m.component).Observe(float64(size))
		}
	}
}

// serves reports whether the server serves the resource info names
// (stored, not stored, or in an aggregated API): requests for any other
// are not counted, so that no client can grow the metrics without bound.
func (s *Server) serves(info requestInfo) bool {
	gvr := schemaGVR(info)
	if _, ok := s.ephemeral[gvr]; ok {
		return true
	}
	if _, ok := s.lookupStore(gvr); ok {
		return true
	}
	_, ok := s.aggregatedAPI(gvr.GroupVersion())
	return ok
}

// RequestLogLevel is the level of the line each request is logged with,
// as upstream's httplog at -v=3 (slog's Info is -v=0, Debug -v=4).
const RequestLogLevel = slog.Level(-3)

// logRequest logs one request that has been answered: who asked what, the
// answer's code and how long it took.
func (s *Server) logRequest(r *http.Request, start time.Time, w *statusWriter) {
	user := ""
	if u := auth.UserFrom(r.Context()); u != nil {
		user = u.Name
	}
	s.log.Log(r.Context(), RequestLogLevel, "HTTP", "verb", r.Method, "URI", r.URL.RequestURI(), "latency", time.Since(start),
		"userAgent", r.UserAgent(), "user", user, "srcIP", r.RemoteAddr, "resp", w.status())
}

// statusWriter remembers the code of the response written through it,
// and counts the bytes of its body.
type statusWriter struct {
	http.ResponseWriter
	code    int
	written int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.written += n
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands the connection over (exec, attach and port-forward over
// SPDY): the request's code is 101.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("%T cannot hijack", w.ResponseWriter)
	}
	if w.code == 0 {
		w.code = http.StatusSwitchingProtocols
	}
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// status is the response's code; a handler that wrote nothing answered
// 200, as net/http does.
func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// countWatchEvent counts one event sent to a watcher of gvr.
func (ms *metrics) countWatchEvent(gvr schema.GroupVersionResource) {
	ms.watchEvents.WithLabelValues(gvr.Group, gvr.Version, gvr.Resource).Inc()
}

// meter is st with every call timed and counted under gr, as upstream's
// etcd_request_* metrics (by whatever backend st is).
func (ms *metrics) meter(st storage.Interface, gr schema.GroupResource) storage.Interface {
	return &meteredStore{Interface: st, ms: ms, group: gr.Group, resource: gr.Resource}
}

type meteredStore struct {
	storage.Interface
	ms              *metrics
	group, resource string
}

func (m *meteredStore) record(op string, start time.Time, err error) {
	m.ms.etcdLatency.WithLabelValues(op, m.group, m.resource).Observe(time.Since(start).Seconds())
	m.ms.etcdTotal.WithLabelValues(op, m.group, m.resource).Inc()
	if err != nil {
		m.ms.etcdErrors.WithLabelValues(op, m.group, m.resource).Inc()
	}
}

func (m *meteredStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	start := time.Now()
	rev, err := m.Interface.Create(ctx, key, value)
	m.record("create", start, err)
	return rev, err
}

func (m *meteredStore) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	start := time.Now()
	kv, err := m.Interface.Get(ctx, key)
	m.record("get", start, err)
	return kv, err
}

func (m *meteredStore) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	start := time.Now()
	res, err := m.Interface.List(ctx, prefix, opts)
	m.record("list", start, err)
	return res, err
}

func (m *meteredStore) Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error) {
	start := time.Now()
	rev, err := m.Interface.Update(ctx, key, value, expectedRevision)
	m.record("update", start, err)
	return rev, err
}

func (m *meteredStore) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	start := time.Now()
	kv, rev, err := m.Interface.Delete(ctx, key, expectedRevision)
	m.record("delete", start, err)
	return kv, rev, err
}

// objectCounts reads, when scraped, how many objects each resource's
// watch cache holds (one series per stored resource, whichever versions
// serve it); -1 while a cache has not listed yet, as upstream's.
type objectCounts struct {
	s        *Server
	old, cur *prometheus.Desc
}

func (c *objectCounts) Describe(ch chan<- *prometheus.Desc) { ch <- c.old; ch <- c.cur }

func (c *objectCounts) Collect(ch chan<- prometheus.Metric) {
	seen := map[schema.GroupResource]bool{}
	count := func(rs *resourceStore) {
		if seen[rs.gr] {
			return
		}
		seen[rs.gr] = true
		n, ready := rs.cache.Len()
		value := float64(n)
		if !ready {
			value = -1
		}
		ch <- prometheus.MustNewConstMetric(c.old, prometheus.GaugeValue, value, rs.gr.String())
		ch <- prometheus.MustNewConstMetric(c.cur, prometheus.GaugeValue, value, rs.gr.Group, rs.gr.Resource)
	}
	for _, rs := range c.s.stores {
		count(rs)
	}
	if cs := c.s.custom.Load(); cs != nil {
		for _, rs := range cs.stores {
			count(rs)
		}
	}
}
