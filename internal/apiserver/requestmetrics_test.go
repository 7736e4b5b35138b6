package apiserver

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry/all"
	"plainkube.dev/plainkube/internal/storage/memory"
)

// gathered is every sample reg has, keyed `name{k="v",…}` with the labels
// sorted (histograms by their _count).
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var pairs []string
			for _, l := range m.GetLabel() {
				pairs = append(pairs, l.GetName()+`="`+l.GetValue()+`"`)
			}
			sort.Strings(pairs)
			name := f.GetName()
			var v float64
			switch {
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			case m.Histogram != nil:
				name, v = name+"_count", float64(m.Histogram.GetSampleCount())
			}
			out[name+"{"+strings.Join(pairs, ",")+"}"] = v
		}
	}
	return out
}

// series is the key gathered uses for name with the given labels.
func series(name string, labels ...string) string {
	var pairs []string
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+`="`+labels[i+1]+`"`)
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// configMapRequest is apiserver_request_total's (or _duration_seconds') series for
// a core/v1 configmaps request.
func configMapRequest(name, verb, scope, code, dryRun string) string {
	labels := []string{"verb", verb, "dry_run", dryRun, "group", "", "version", "v1", "resource", "configmaps", "subresource", "",
		"scope", scope, "component", "apiserver"}
	if code != "" {
		labels = append(labels, "code", code)
	}
	return series(name, labels...)
}

// configMapSeries is the series of a core/v1 configmaps request in the
// metrics without dry_run and code labels (SLI latency, response sizes).
func configMapSeries(name, verb, scope string) string {
	return series(name, "verb", verb, "group", "", "version", "v1", "resource", "configmaps", "subresource", "",
		"scope", scope, "component", "apiserver")
}

// TestSLILatency: the SLI latency is the request's latency less the time
// it waited on webhooks and for a seat; a response's size is recorded.
func TestSLILatency(t *testing.T) {
	reg := prometheus.NewRegistry()
	ms := newMetrics(nil)
	reg.MustRegister(ms.latency, ms.sliLatency, ms.sizes)
	end := ms.begin(measuredRequest{verb: "GET", group: "", version: "v1", resource: "configmaps", scope: "resource", component: "apiserver"}, false)
	time.Sleep(20 * time.Millisecond)
	const excluded = 15 * time.Millisecond
	end(200, 4321, excluded)
	sums := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				sums[f.GetName()] = h.GetSampleSum()
			}
		}
	}
	latency, sli := sums["apiserver_request_duration_seconds"], sums["apiserver_request_sli_duration_seconds"]
	if latency < 0.02 || math.Abs(latency-sli-excluded.Seconds()) > 1e-9 {
		t.Errorf("latency %v s, SLI latency %v s: want the SLI %v less", latency, sli, excluded)
	}
	if got := sums["apiserver_response_sizes"]; got != 4321 {
		t.Errorf("response size %v, want 4321", got)
	}
}

// TestRequestMetrics: requests are counted and timed by upstream's labels
// (the verb as upstream reports it, the scope, the code, dryRun), watches
// as long-running with their events counted, storage calls by operation
// and resource, and the objects each resource has; a request for a
// resource the server does not serve leaves no series.
func TestRequestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newTestServerWith(t, Config{Storage: memory.New(memory.Options{}), Resources: all.Resources(), Metrics: reg, Logger: discardLogger()})
	cm := func(name string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`
	}
	const path = "/api/v1/namespaces/default/configmaps"
	for _, c := range []struct {
		method, path, ct, body string
		code                   int
	}{
		{"POST", path, "application/json", cm("a"), 201},
		{"POST", path, "application/json", cm("a"), 409},
		{"POST", path + "?dryRun=All", "application/json", cm("dry"), 201},
		{"GET", path + "/a", "", "", 200},
		{"GET", path, "", "", 200},
		{"PATCH", path + "/a?fieldManager=m", "application/apply-patch+yaml", cm("a"), 200},
		{"PATCH", path + "/a", "application/merge-patch+json", `{"data":{"k":"v"}}`, 200},
		{"POST", path, "application/json", cm("b"), 201},
		{"DELETE", path + "/b", "", "", 200},
		{"GET", "/api/v1/namespaces/default/widgets", "", "", 404},
		{"GET", "/no/such/path", "", "", 404},
	} {
		if rec := do(h, c.method, c.path, c.ct, "", c.body); rec.Code != c.code {
			t.Fatalf("%s %s: %d, want %d: %s", c.method, c.path, rec.Code, c.code, rec.Body)
		}
	}
	// A watch, over a real connection: its initial event, then its end.
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + path + "?watch=1&timeoutSeconds=1")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	got := gathered(t, reg)
	want := map[string]float64{
		configMapRequest("apiserver_request_total", "POST", "resource", "201", ""):                 2,
		configMapRequest("apiserver_request_total", "POST", "resource", "409", ""):                 1,
		configMapRequest("apiserver_request_total", "POST", "resource", "201", "All"):              1,
		configMapRequest("apiserver_request_total", "GET", "resource", "200", ""):                  1,
		configMapRequest("apiserver_request_total", "LIST", "namespace", "200", ""):                1,
		configMapRequest("apiserver_request_total", "APPLY", "resource", "200", ""):                1,
		configMapRequest("apiserver_request_total", "PATCH", "resource", "200", ""):                1,
		configMapRequest("apiserver_request_total", "DELETE", "resource", "200", ""):               1,
		configMapRequest("apiserver_request_total", "WATCH", "namespace", "200", ""):               1,
		configMapRequest("apiserver_request_duration_seconds_count", "POST", "resource", "", ""):   3, // 201, 201 and 409
		configMapRequest("apiserver_request_duration_seconds_count", "WATCH", "namespace", "", ""): 1,
		series("apiserver_longrunning_requests", "verb", "WATCH", "group", "", "version", "v1", "resource", "configmaps",
			"subresource", "", "scope", "namespace", "component", "apiserver"): 0,
		configMapSeries("apiserver_request_sli_duration_seconds_count", "POST", "resource"):                         3, // not the dry run
		configMapSeries("apiserver_response_sizes_count", "GET", "resource"):                                        1,
		configMapSeries("apiserver_response_sizes_count", "LIST", "namespace"):                                      1,
		series("apiserver_current_inqueue_requests", "request_kind", "readOnly"):                                    0,
		series("apiserver_current_inflight_requests", "request_kind", "mutating"):                                   0,
		series("apiserver_current_inflight_requests", "request_kind", "readOnly"):                                   0,
		series("apiserver_watch_events_total", "group", "", "version", "v1", "resource", "configmaps"):              1,
		series("apiserver_storage_objects", "resource", "configmaps"):                                               1,
		series("apiserver_resource_objects", "group", "", "resource", "configmaps"):                                 1,
		series("apiserver_resource_objects", "group", "apps", "resource", "deployments"):                            0,
		series("apiserver_storage_objects", "resource", "deployments.apps"):                                         0,
		series("etcd_requests_total", "operation", "create", "group", "", "resource", "configmaps"):                 3,
		series("etcd_request_errors_total", "operation", "create", "group", "", "resource", "configmaps"):           1,
		series("etcd_request_duration_seconds_count", "operation", "delete", "group", "", "resource", "configmaps"): 1,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for k := range got {
		if strings.Contains(k, "widgets") || strings.Contains(k, "/no/such/path") {
			t.Errorf("a request for nothing served left a series: %s", k)
		}
	}
	if t.Failed() {
		var keys []string
		for k := range got {
			if strings.HasPrefix(k, "apiserver_request_total") || strings.HasPrefix(k, "etcd_requests_total") {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		t.Logf("series:\n%s", strings.Join(keys, "\n"))
	}
}

// TestRequestLog: at RequestLogLevel (upstream's -v=3) each request is a
// line saying who asked what and the answer; at Info there is none.
func TestRequestLog(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var buf strings.Builder
		level := slog.LevelInfo
		if verbose {
			level = RequestLogLevel
		}
		log := slog.New(slog.NewTextHandler(&syncWriter{w: &buf}, &slog.HandlerOptions{Level: level}))
		s, err := New(Config{Storage: memory.New(memory.Options{}), Resources: all.Resources(), Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go s.Run(ctx)
		<-s.Ready()
		admin := &auth.User{Name: "admin", Groups: []string{auth.GroupMasters}}
		req := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps/nope", nil)
		req.Header.Set("User-Agent", "test-agent")
		s.ServeHTTP(httptest.NewRecorder(), req.WithContext(auth.WithUser(req.Context(), admin)))
		cancel()
		got := buf.String()
		line := `msg=HTTP verb=GET URI=/api/v1/namespaces/default/configmaps/nope`
		if verbose && (!strings.Contains(got, line) || !strings.Contains(got, "userAgent=test-agent user=admin") || !strings.Contains(got, "resp=404")) {
			t.Errorf("at RequestLogLevel the log is:\n%s", got)
		}
		if !verbose && strings.Contains(got, "msg=HTTP") {
			t.Errorf("at Info a request was logged:\n%s", got)
		}
	}
}

// syncWriter serializes writes from the server's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
