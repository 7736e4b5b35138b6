package e2e

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sampleValue is the value of the first sample of metric in a Prometheus
// text exposition whose labels include every pair (`k="v"`); -1: none.
func sampleValue(text, metric string, pairs ...string) float64 {
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, metric+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		all := true
		for _, p := range pairs {
			all = all && (strings.HasPrefix(labels, p+",") || strings.Contains(labels, ","+p+",") ||
				strings.HasSuffix(labels, ","+p) || labels == p)
		}
		if !all {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return -1
		}
		return f
	}
	return -1
}

// TestMetrics: after a Deployment rolls out, the API server's /metrics
// has upstream's request, storage, work queue, scheduler and leader
// election series with the work that was done, and every metric the
// dashboard in docs/ plots; a member of system:monitoring may read it, a
// plain user may not. Its log is JSON, each line naming its component.
func TestMetrics(t *testing.T) {
	c := startCluster(t, "--sim-nodes", "1", "--log-format", "json")
	c.eventually([]string{"sim-0"}, "get", "nodes")
	dir := t.TempDir()
	c.must("apply", "-f", writeFile(t, dir, "web.yaml", webDeploymentFastStop))
	c.must("rollout", "status", "deployment/web", "--timeout=60s")

	text := c.mustStdout("get", "--raw", "/metrics")
	checks := []struct {
		metric string
		pairs  []string
		min    float64
	}{
		// kubectl apply created the Deployment: one POST answered 201.
		{"apiserver_request_total", []string{`verb="POST"`, `group="apps"`, `version="v1"`, `resource="deployments"`, `scope="resource"`, `component="apiserver"`, `code="201"`}, 1},
		{"apiserver_request_duration_seconds_count", []string{`verb="LIST"`, `resource="pods"`}, 1},
		{"apiserver_request_sli_duration_seconds_count", []string{`verb="POST"`, `group="apps"`, `resource="deployments"`}, 1},
		{"apiserver_response_sizes_count", []string{`verb="LIST"`, `resource="pods"`}, 1},
		{"apiserver_current_inqueue_requests", []string{`request_kind="mutating"`}, 0},
		{"apiserver_longrunning_requests", []string{`verb="WATCH"`, `resource="pods"`}, 1},
		{"apiserver_watch_events_total", []string{`resource="pods"`}, 3},
		{"apiserver_storage_objects", []string{`resource="deployments.apps"`}, 1},
		{"apiserver_resource_objects", []string{`group=""`, `resource="pods"`}, 3},
		{"etcd_request_duration_seconds_count", []string{`operation="create"`, `group=""`, `resource="pods"`}, 3},
		{"workqueue_adds_total", []string{`name="deployment"`}, 1},
		{"workqueue_adds_total", []string{`name="replicaset"`}, 1},
		{"workqueue_adds_total", []string{`name="endpoint_slice"`}, 1},
		{"workqueue_depth", []string{`name="deployment"`}, 0},
		{"workqueue_work_duration_seconds_count", []string{`name="replicaset"`}, 1},
		{"scheduler_schedule_attempts_total", []string{`result="scheduled"`, `profile="default-scheduler"`}, 3},
		{"scheduler_scheduling_attempt_duration_seconds_count", []string{`result="scheduled"`}, 3},
		{"scheduler_pending_pods", []string{`queue="active"`}, 0},
		{"scheduler_framework_extension_point_duration_seconds_count", []string{`extension_point="PreFilter"`, `status="Success"`, `profile="default-scheduler"`}, 3},
		{"scheduler_framework_extension_point_duration_seconds_count", []string{`extension_point="Reserve"`, `status="Success"`}, 3},
		// The first scheduling cycle is one of the one in ten whose plugins are timed.
		{"scheduler_plugin_execution_duration_seconds_count", []string{`plugin="NodeResourcesFit"`, `extension_point="Filter"`, `status="Success"`}, 1},
		{"leader_election_master_status", []string{`name="kube-scheduler"`}, 1},
	}
	for _, ch := range checks {
		if v := sampleValue(text, ch.metric, ch.pairs...); v < ch.min {
			t.Errorf("%s%v = %v, want at least %v", ch.metric, ch.pairs, v, ch.min)
		}
	}

	// Every metric the dashboard plots is served.
	raw, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	name := regexp.MustCompile(`\b(apiserver|etcd|workqueue|scheduler|leader_election|process|go)_[a-z_]+\b`)
	plotted := 0
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			for _, m := range name.FindAllString(target.Expr, -1) {
				plotted++
				if !strings.Contains(text, "\n"+m+"{") && !strings.Contains(text, "\n"+m+" ") {
					t.Errorf("dashboard panel %q plots %s, which /metrics does not serve", p.Title, m)
				}
			}
		}
	}
	if plotted < 20 {
		t.Errorf("the dashboard plots %d metrics; the test read it wrong", plotted)
	}

	// system:monitoring may read /metrics; a user with no role may not.
	c.mustStdout("get", "--raw", "/metrics", "--as=prometheus", "--as-group=system:monitoring")
	out := c.mustFail("get", "--raw", "/metrics", "--as=nobody")
	contains(t, out, "forbidden")

	// With --log-format json, every line the server logged (client-go's
	// through klog too) is a JSON object naming the component or
	// controller that said it; stdout has the banner only.
	c.stop()
	logged := 0
	for _, line := range strings.Split(strings.TrimSpace(c.log.String()), "\n") {
		if !strings.HasPrefix(line, "{") {
			if !strings.HasPrefix(line, "plainkube ") && !strings.HasPrefix(line, "join another host") && !strings.HasPrefix(line, "  plainkube agent") {
				t.Errorf("a line neither JSON nor the banner: %s", line)
			}
			continue
		}
		logged++
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("%v: %s", err, line)
		} else if rec["component"] == nil && rec["controller"] == nil {
			t.Errorf("a line naming no component: %s", line)
		}
	}
	if logged < 10 {
		t.Errorf("only %d JSON lines logged", logged)
	}
}
