package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/pkg/testenv"
)

// The test binary doubles as a stand-in server for the startup workload:
// with BENCH_TEST_SERVE_PORT set it serves /readyz and /version over HTTPS
// on that port.
func TestMain(m *testing.M) {
	if port := os.Getenv("BENCH_TEST_SERVE_PORT"); port != "" {
		serveReadyz(port)
		return
	}
	os.Exit(m.Run())
}

func serveReadyz(port string) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			fmt.Fprint(w, "ok")
			return
		case "/version":
			fmt.Fprint(w, `{"major":"9","gitVersion":"v9.9.9-standin"}`)
			return
		}
		http.NotFound(w, r)
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv.Listener = ln
	srv.TLS = &tls.Config{}
	srv.StartTLS()
	select {}
}

func TestServerCommand(t *testing.T) {
	got := serverCommand("/bin/pk server --data-dir {dataDir} --port {port}", "/tmp/d", 1, 2, 3)
	want := []string{"/bin/pk", "server", "--data-dir", "/tmp/d", "--port", "1"}
	if !slices.Equal(got, want) {
		t.Errorf("plain command: got %q, want %q", got, want)
	}
	got = serverCommand("etcd --listen-client-urls http://127.0.0.1:{etcdPort} --peer {etcdPeerPort} & exec apiserver --secure-port {port}", "/d", 6443, 2379, 2380)
	want = []string{"/bin/sh", "-c", "etcd --listen-client-urls http://127.0.0.1:2379 --peer 2380 & exec apiserver --secure-port 6443"}
	if !slices.Equal(got, want) {
		t.Errorf("shell line: got %q, want %q", got, want)
	}
	if q := shellQuote("/a b/it's"); q != `'/a b/it'\''s'` {
		t.Errorf("shellQuote = %s", q)
	}
	if q := shellQuote("/usr/bin/plainkube"); q != "/usr/bin/plainkube" {
		t.Errorf("shellQuote of a plain path = %s", q)
	}
}

func shortSettle(t *testing.T) {
	s, i := settleTime, idleWindow
	settleTime, idleWindow = 50*time.Millisecond, 50*time.Millisecond
	t.Cleanup(func() { settleTime, idleWindow = s, i })
}

// A shell line that starts two processes (a sleeper standing in for etcd,
// and the server) is launched, timed to /readyz and measured as one tree;
// a server without nodes reports runs_with_ready_node 0 and no
// first_node_ready figures, and everything is stopped afterwards.
func TestStartupShellLineWithoutNodes(t *testing.T) {
	shortSettle(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "started")
	line := fmt.Sprintf("touch %s; sleep 617 & exec env BENCH_TEST_SERVE_PORT={port} %s", marker, shellQuote(self))
	o := &Options{ServerCommand: line, Repeat: 2, NodeWait: 100 * time.Millisecond}
	rep, err := Run(context.Background(), []string{"startup"}, o)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if rep.Server.Version != "v9.9.9-standin" {
		t.Errorf("server version %q, want the started server's", rep.Server.Version)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the line did not run under a shell: %v", err)
	}
	got := map[string]float64{}
	for _, m := range r.Metrics {
		got[m.Name] = m.Value
	}
	for _, k := range []string{"readyz_min", "readyz_median", "readyz_max", "rss_after_settle_median", "idle_cpu_median"} {
		if _, ok := got[k]; !ok {
			t.Errorf("missing %s in %v", k, got)
		}
	}
	if got["runs_with_ready_node"] != 0 {
		t.Errorf("runs_with_ready_node = %v, want 0", got["runs_with_ready_node"])
	}
	if _, ok := got["first_node_ready_median"]; ok {
		t.Errorf("first_node_ready reported for a server without nodes: %v", got)
	}
	// Test binary + sleep: more than a lone shell would take.
	if got["rss_after_settle_min"] < 2 {
		t.Errorf("rss_after_settle_min = %v MiB, want the whole tree", got["rss_after_settle_min"])
	}
	// The sleeper went with its process group.
	for i := 0; ; i++ {
		out, _ := exec.Command("pgrep", "-f", "^sleep 617$").Output()
		if len(out) == 0 {
			break
		}
		if i == 40 {
			t.Fatalf("sleep 617 still running after the workload: pids %s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStartupCommandThatExitsEarly(t *testing.T) {
	shortSettle(t)
	o := &Options{ServerCommand: "echo no etcd here >&2; exit 3", Repeat: 1}
	var r Result
	err := runStartup(context.Background(), o, &r)
	if err == nil || !strings.Contains(err.Error(), "no etcd here") {
		t.Fatalf("err = %v, want the command's output", err)
	}
}

// The client workloads at small sizes against a real plainkube control
// plane: no errors, and the keys the JSON carries for any server.
func TestWorkloadsSmall(t *testing.T) {
	env := testenv.Start(t, testenv.WithControllers())
	o := &Options{
		Config: env.Config, Concurrency: []int{1, 4}, Duration: 400 * time.Millisecond,
		ListPods: 40, Watchers: 5, Events: 3, ServerPIDs: []int{os.Getpid()},
	}
	rep, err := Run(context.Background(), []string{"crud", "webhook", "list", "watch", "churn"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Server.Version == "" || rep.Machine.Cores == 0 {
		t.Errorf("report lacks the server version or the machine: %+v", rep)
	}
	want := map[string][]string{
		"crud":    {"configmaps_c1_ops_per_sec", "configmaps_c4_create_p99", "pods_c4_delete_p50", "pods_c1_errors", "server_rss_after"},
		"webhook": {"create_without_webhook_p50", "create_with_webhook_p50", "webhook_added_p50", "webhook_calls", "webhook_connections_opened"},
		"list":    {"all_namespaces_median", "label_selector_bytes", "paginated_500_median", "server_rss_after"},
		"watch":   {"delivery_p50", "delivery_p99", "deliveries_per_sec", "missed_deliveries"},
		"churn":   {"errors", "informer_mismatches", "event_lag_max"},
	}
	for _, res := range rep.Results {
		if res.Error != "" {
			t.Errorf("%s: %s", res.Workload, res.Error)
		}
		got := map[string]float64{}
		for _, m := range res.Metrics {
			got[m.Name] = m.Value
		}
		for _, k := range want[res.Workload] {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: no %s", res.Workload, k)
			}
		}
		for _, k := range []string{"errors", "configmaps_c1_errors", "pods_c4_errors", "missed_deliveries"} {
			if v, ok := got[k]; ok && v != 0 {
				t.Errorf("%s: %s = %v", res.Workload, k, v)
			}
		}
		// The API server keeps its connections to a webhook alive.
		if calls := got["webhook_calls"]; res.Workload == "webhook" && (calls < 2 || got["webhook_connections_opened"] > calls/2) {
			t.Errorf("webhook: %v calls on %v new connections", calls, got["webhook_connections_opened"])
		}
		if v := got["server_cpu"]; res.Workload == "crud" && v <= 0 {
			t.Errorf("crud: server_cpu = %v", v)
		}
		if v := got["server_rss_after"]; v <= 0 {
			t.Errorf("%s: server_rss_after = %v", res.Workload, v)
		}
	}
}

// An update that conflicts with another writer is read again and retried,
// counted as a conflict and not as an error.
func TestUpdateWithRetryAfterConflict(t *testing.T) {
	env := testenv.Start(t)
	cs, err := clientFor(env.Config, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := cs.CoreV1().ConfigMaps("default")
	stale, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := stale.DeepCopy()
	other.Data["other"] = "writer"
	if _, err := c.Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var conflicts int
	var verbs []string
	record := func(verb string, _ time.Time, err error) bool {
		if err != nil {
			t.Errorf("%s: %v", verb, err)
		}
		verbs = append(verbs, verb)
		return err == nil
	}
	ok := updateWithRetry(ctx, stale, c.Get, c.Update, func(cm *corev1.ConfigMap) { cm.Data["k"] = "v2" }, record, func() { conflicts++ })
	if !ok || conflicts != 1 || !slices.Equal(verbs, []string{"get", "update"}) {
		t.Fatalf("ok=%v conflicts=%d verbs=%v, want a conflict, a get and an update", ok, conflicts, verbs)
	}
	got, err := c.Get(ctx, "cm", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v2" || got.Data["other"] != "writer" {
		t.Fatalf("after retry: %v %v", got.Data, err)
	}
}

// density at a small size against a control plane with controllers, a
// scheduler and simulated nodes: every pod scheduled and Running.
func TestDensitySmall(t *testing.T) {
	env := testenv.Start(t, testenv.WithControllers(), testenv.WithScheduler(), testenv.WithSimNodes(3))
	o := &Options{Config: env.Config, Replicas: 30, ServerPIDs: []int{os.Getpid()}}
	deadline := time.Now().Add(20 * time.Second)
	for n, _ := readyNodesOf(t, o); n < 3 && time.Now().Before(deadline); n, _ = readyNodesOf(t, o) {
		time.Sleep(50 * time.Millisecond)
	}
	rep, err := Run(context.Background(), []string{"density"}, o)
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results[0]
	if res.Error != "" {
		t.Fatal(res.Error)
	}
	got := map[string]float64{}
	for _, m := range res.Metrics {
		got[m.Name] = m.Value
	}
	if got["nodes"] != 3 || got["replicas"] != 30 || got["all_running"] <= 0 || got["all_scheduled"] <= 0 || got["all_scheduled"] > got["all_running"] {
		t.Errorf("figures: %v", got)
	}
	if _, ok := got["server_rss_per_pod"]; !ok {
		t.Errorf("no server_rss_per_pod with ServerPIDs: %v", got)
	}
}

// pvc at a small size: every claim of the default class (local-path,
// which the server creates) bound through the scheduler, the provisioner
// and the PV binder, and every pod Running on simulated nodes.
func TestPVCSmall(t *testing.T) {
	env := testenv.Start(t, testenv.WithControllers(), testenv.WithScheduler(), testenv.WithSimNodes(3))
	o := &Options{Config: env.Config, Claims: 30}
	deadline := time.Now().Add(20 * time.Second)
	for n, _ := readyNodesOf(t, o); n < 3 && time.Now().Before(deadline); n, _ = readyNodesOf(t, o) {
		time.Sleep(50 * time.Millisecond)
	}
	rep, err := Run(context.Background(), []string{"pvc"}, o)
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results[0]
	if res.Error != "" {
		t.Fatal(res.Error)
	}
	got := map[string]float64{}
	for _, m := range res.Metrics {
		got[m.Name] = m.Value
	}
	if got["nodes"] != 3 || got["claims"] != 30 || got["all_created"] <= 0 || got["all_bound"] <= 0 || got["all_running"] <= 0 {
		t.Errorf("figures: %v", got)
	}
}

func readyNodesOf(t *testing.T, o *Options) (int, error) {
	cs, err := clientFor(o.Config, 1)
	if err != nil {
		t.Fatal(err)
	}
	return readyNodes(context.Background(), cs)
}
