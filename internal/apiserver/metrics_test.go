package apiserver

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/api/stats"
	"plainkube.dev/plainkube/internal/registry/all"
	"plainkube.dev/plainkube/internal/storage/memory"
)

// TestMetricsAPI serves metrics.k8s.io from a fake agent's summary: one
// node with an agent, one simulated node (no metrics), pods on both.
func TestMetricsAPI(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	u := func(v uint64) *uint64 { return &v }
	sum := stats.Summary{
		Node: stats.NodeStats{NodeName: "real", CPU: &stats.CPUStats{UsageNanoCores: u(250_000_000), UsageCoreNanoSeconds: u(9e9)},
			Memory: &stats.MemoryStats{WorkingSetBytes: u(512 << 20)}},
		Pods: []stats.PodStats{
			{PodRef: stats.PodReference{Name: "web", Namespace: "default"}, Containers: []stats.ContainerStats{
				{Name: "b", CPU: &stats.CPUStats{UsageNanoCores: u(1_000_000)}, Memory: &stats.MemoryStats{WorkingSetBytes: u(2 << 20)}},
				{Name: "a", CPU: &stats.CPUStats{UsageNanoCores: u(2_000_000)}, Memory: &stats.MemoryStats{WorkingSetBytes: u(1 << 20)}},
			}},
			// No rate yet: left out.
			{PodRef: stats.PodReference{Name: "fresh", Namespace: "default"}, Containers: []stats.ContainerStats{
				{Name: "c", CPU: &stats.CPUStats{UsageCoreNanoSeconds: u(1)}, Memory: &stats.MemoryStats{WorkingSetBytes: u(1)}},
			}},
		},
	}
	sum.Node.CPU.Time.Time = at
	for i := range sum.Pods[0].Containers {
		sum.Pods[0].Containers[i].CPU.Time.Time = at
	}
	agent := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stats/summary" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(&sum)
	}))
	defer agent.Close()
	host, port, _ := net.SplitHostPort(agent.Listener.Addr().String())

	_, h := startTestServer(t, Config{Storage: memory.New(memory.Options{}), Resources: all.Resources(), Logger: discardLogger(), KubeletClient: agent.Client()})
	must := func(method, path, body string) {
		t.Helper()
		if rec := do(h, method, path, "application/json", "", body); rec.Code >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
	}
	must("POST", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`)
	must("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"real","labels":{"role":"x"}}}`)
	must("PUT", "/api/v1/nodes/real/status", fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"real"},"status":{"addresses":[{"type":"InternalIP","address":%q}],"daemonEndpoints":{"kubeletEndpoint":{"Port":%s}}}}`, host, port))
	must("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"sim","labels":{"plainkube.dev/simulated":"true"}}}`)
	must("PUT", "/api/v1/nodes/sim/status", fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"sim"},"status":{"addresses":[{"type":"InternalIP","address":%q}],"daemonEndpoints":{"kubeletEndpoint":{"Port":%s}}}}`, host, port))
	uids := map[string]string{}
	for _, p := range []struct{ name, node, app, mirror string }{{"web", "real", "web", ""}, {"fresh", "real", "web", ""}, {"simpod", "sim", "web", ""}, {"db", "real", "db", ""}, {"static", "real", "s", "hash1"}, {"stale", "real", "s", ""}} {
		ann := "{}"
		if p.mirror != "" {
			ann = fmt.Sprintf(`{"kubernetes.io/config.mirror":%q}`, p.mirror)
		}
		rec := do(h, "POST", "/api/v1/namespaces/default/pods", "application/json", "", fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"labels":{"app":%q},"annotations":%s},"spec":{"nodeName":%q,"containers":[{"name":"c","image":"i"}]}}`, p.name, p.app, ann, p.node))
		var created struct{ Metadata struct{ UID string } }
		if rec.Code != 201 || json.Unmarshal(rec.Body.Bytes(), &created) != nil {
			t.Fatalf("pod %s: %d %s", p.name, rec.Code, rec.Body)
		}
		uids[p.name] = created.Metadata.UID
	}
	sum.Pods[0].PodRef.UID, sum.Pods[1].PodRef.UID = uids["web"], uids["fresh"]
	one := func(name, uid string) stats.PodStats {
		return stats.PodStats{PodRef: stats.PodReference{Name: name, Namespace: "default", UID: uid}, Containers: []stats.ContainerStats{
			{Name: "c", CPU: &stats.CPUStats{UsageNanoCores: u(5_000_000)}, Memory: &stats.MemoryStats{WorkingSetBytes: u(3 << 20)}}}}
	}
	// A static pod (UID the mirror's hash), and a pod of an earlier UID.
	sum.Pods = append(sum.Pods, one("static", "hash1"), one("stale", "old-uid"))

	// Discovery.
	rec := do(h, "GET", "/apis/metrics.k8s.io/v1beta1", "", "", "")
	for _, want := range []string{`"name":"nodes"`, `"kind":"NodeMetrics"`, `"kind":"PodMetrics"`, `"verbs":["get","list"]`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("discovery lacks %s: %s", want, rec.Body)
		}
	}
	if rec := do(h, "GET", "/apis", "", "", ""); !strings.Contains(rec.Body.String(), `"name":"metrics.k8s.io"`) {
		t.Errorf("/apis lacks metrics.k8s.io")
	}

	cases := []struct {
		path, accept string
		code         int
		want, not    []string
	}{
		{"/apis/metrics.k8s.io/v1beta1/nodes", "", 200,
			[]string{`"kind":"NodeMetricsList"`, `"name":"real"`, `"cpu":"250m"`, `"memory":"512Mi"`, `"window":"5s"`, `"timestamp":"2026-11-29T10:00:00Z"`, `"name":"sim"`}, nil},
		{"/apis/metrics.k8s.io/v1beta1/nodes/real", "", 200, []string{`"kind":"NodeMetrics"`, `"labels":{"role":"x"}`}, nil},
		// A simulated node's usage is its pods' (declared by annotations): none here.
		{"/apis/metrics.k8s.io/v1beta1/nodes/sim", "", 200, []string{`"kind":"NodeMetrics"`, `"usage":{"cpu":"0","memory":"0"}`}, nil},
		{"/apis/metrics.k8s.io/v1beta1/nodes/none", "", 404, nil, nil},
		{"/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=role%3Dy", "", 200, []string{`"items":[]`}, nil},
		{"/apis/metrics.k8s.io/v1beta1/pods", "", 200,
			[]string{`"kind":"PodMetricsList"`, `"name":"web"`, `"containers":[{"name":"a","usage":{"cpu":"2m","memory":"1Mi"}},{"name":"b"`, `"name":"static"`}, []string{`"fresh"`, `"simpod"`, `"db"`, `"stale"`}},
		{"/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web", "", 200, []string{`"kind":"PodMetrics"`, `"namespace":"default"`}, nil},
		{"/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=app%3Ddb", "", 200, []string{`"items":[]`}, nil},
		{"/apis/metrics.k8s.io/v1beta1/namespaces/other/pods", "", 200, []string{`"items":[]`}, nil},
		{"/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/simpod", "", 404, []string{`pods.metrics.k8s.io \"default/simpod\" not found`}, nil},
		{"/apis/metrics.k8s.io/v1beta1/nodes", "application/json;as=Table;v=v1;g=meta.k8s.io", 200,
			[]string{`"kind":"Table"`, `"cells":["real","250m","512Mi","5s"]`}, nil},
		{"/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=%3D%3D", "", 400, nil, nil},
		{"/apis/metrics.k8s.io/v1beta1/things", "", 404, nil, nil},
	}
	for _, c := range cases {
		rec := do(h, "GET", c.path, "", c.accept, "")
		if rec.Code != c.code {
			t.Errorf("%s: %d %s, want %d", c.path, rec.Code, rec.Body, c.code)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(rec.Body.String(), w) {
				t.Errorf("%s lacks %s: %s", c.path, w, rec.Body)
			}
		}
		for _, w := range c.not {
			if strings.Contains(rec.Body.String(), w) {
				t.Errorf("%s has %s: %s", c.path, w, rec.Body)
			}
		}
	}
	if rec := do(h, "DELETE", "/apis/metrics.k8s.io/v1beta1/nodes/real", "", "", ""); rec.Code != 405 {
		t.Errorf("delete: %d", rec.Code)
	}
}
