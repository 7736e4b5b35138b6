package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The helm releases the tests build from the Go module proxy: v3 and v4,
// the real binaries, unchanged.
var helmModules = map[string]string{
	"v3": "helm.sh/helm/v3/cmd/helm@v3.21.4",
	"v4": "helm.sh/helm/v4/cmd/helm@v4.3.2",
}

// helmBinary builds helm of the given major version with `go install`
// (pinned above) into the user's cache directory, once per machine, and
// returns its path.
func helmBinary(t *testing.T, major string) string {
	t.Helper()
	module := helmModules[major]
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	version := module[strings.LastIndex(module, "@")+1:]
	dir := filepath.Join(cache, "plainkube-e2e", "helm-"+version)
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	start := time.Now()
	install := exec.Command("go", "install", module)
	install.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install %s: %v\n%s", module, err, out)
	}
	t.Logf("built helm %s in %s", version, time.Since(start).Round(time.Second))
	return bin
}

// helmRun is helm (one binary) against one cluster, in one namespace.
type helmRun struct {
	t         *testing.T
	c         *cluster
	bin       string
	major     string
	namespace string
	chart     string
}

func (h *helmRun) run(args ...string) (string, error) {
	cmd := exec.Command(h.bin, append(args, "--kubeconfig", h.c.kubeconfig(), "-n", h.namespace)...)
	home := h.t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (h *helmRun) must(args ...string) string {
	h.t.Helper()
	out, err := h.run(args...)
	if err != nil {
		h.t.Fatalf("helm %s: %v\n%s\nserver log tail:\n%s", strings.Join(args, " "), err, out, tail(h.c.log.String(), 30))
	}
	return out
}

func (h *helmRun) mustFail(args ...string) string {
	h.t.Helper()
	out, err := h.run(args...)
	if err == nil {
		h.t.Fatalf("helm %s succeeded, want an error:\n%s", strings.Join(args, " "), out)
	}
	return out
}

// get is kubectl get in the release's namespace.
func (h *helmRun) get(args ...string) string {
	h.t.Helper()
	return h.c.mustStdout(append([]string{"get", "-n", h.namespace}, args...)...)
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// TestHelm installs, tests, upgrades, rolls back and uninstalls a chart
// (test/e2e/testdata/helm/web: a Deployment whose pods run on the real
// node, a Service, ConfigMaps, a Job, hooks of every kind with weights and
// delete policies, a test hook, a CRD in crds/ and a custom resource of
// it, a dependency, lookup, a values schema) with the real helm v3 and v4,
// each in its own namespace of one cluster. Root only.
func TestHelm(t *testing.T) {
	requireRealNode(t)
	bins := map[string]string{}
	for _, major := range []string{"v3", "v4"} {
		bins[major] = helmBinary(t, major)
	}
	c := startCluster(t, "--enable-node", "--cluster-cidr", "10.48.0.0/16")
	t.Cleanup(func() {
		for _, major := range []string{"v3", "v4"} {
			c.run("delete", "namespace", "helm-"+major, "--wait=false")
		}
		c.eventually([]string{"No resources found"}, "get", "pods", "-A", "-l", "!k8s-app")
	})
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	buildBusybox(t, c.dataDir, "sh,echo,sleep,cat,httpd,mkdir")
	if out, err := exec.Command(binary, "image", "build", "--data-dir", c.dataDir, "--tag", "nettool:e2e",
		"--binary", nettool).CombinedOutput(); err != nil {
		t.Fatalf("image build: %v\n%s", err, out)
	}
	chart, err := filepath.Abs("testdata/helm/web")
	if err != nil {
		t.Fatal(err)
	}
	for _, major := range []string{"v3", "v4"} {
		t.Run(major, func(t *testing.T) {
			h := &helmRun{t: t, c: c, bin: bins[major], major: major, namespace: "helm-" + major, chart: chart}
			helmLifecycle(h)
		})
	}
}

// helmLifecycle walks one release through helm's commands and checks what
// each left in the cluster.
func helmLifecycle(h *helmRun) {
	t, c := h.t, h.c
	c.must("create", "namespace", h.namespace)
	// The chart looks this ConfigMap up (lookup), which only a client
	// talking to the server sees.
	c.must("create", "configmap", "site-config", "-n", h.namespace, "--from-literal=site=plainkube")
	values := writeFile(t, t.TempDir(), "values.yaml", "replicas: 2\njobSeconds: 3\n")

	// Values that fail the chart's schema are refused before anything is sent.
	contains(t, h.mustFail("install", "rel", h.chart, "--set", "replicas=-1"), "replicas")
	if out := c.mustStdout("get", "all", "-n", h.namespace, "-o", "name"); strings.TrimSpace(out) != "" {
		t.Fatalf("a refused install left objects: %s", out)
	}

	h.must("install", "rel", h.chart, "-f", values, "--set", "message=one", "--wait", "--wait-for-jobs", "--timeout", "3m")
	h.installed("rel", "one")
	if got := h.get("widget", "rel-widget", "-o", "jsonpath={.spec.size}"); got != "2" {
		t.Fatalf("Widget (CRD from crds/) size = %q", got)
	}
	if got := h.get("configmap", "rel-cache", "-o", "jsonpath={.data.size}"); got != "64" {
		t.Fatalf("the dependency's ConfigMap: size = %q", got)
	}
	h.hooksRan(1, "pre-install", "post-install")

	contains(t, h.must("status", "rel"), "STATUS: deployed", "REVISION: 1")
	contains(t, h.must("get", "notes", "rel"), `rel serves "one" at http://rel-web.`+h.namespace+`.svc.cluster.local/`)
	contains(t, h.must("get", "values", "rel"), "message: one", "replicas: 2")
	contains(t, h.must("get", "values", "rel", "--all"), "jobSeconds: 3", "image: busybox:e2e")
	contains(t, h.must("get", "manifest", "rel"), "kind: Deployment", "kind: Widget", "name: rel-cache")
	contains(t, h.must("get", "hooks", "rel"), "helm.sh/hook: pre-install", "helm.sh/hook: test")
	contains(t, h.must("list", "-A"), "rel", h.namespace, "deployed", "web-0.1.0")
	// Rendering checked by the server: the manifests against its schemas
	// (the Widget's from the CRD now installed).
	validate := "--validate"
	if h.major == "v4" {
		validate = "--dry-run=server"
	}
	contains(t, h.must("template", "rel", h.chart, validate), "kind: Widget")
	// The test hook: a pod that fetches the Service by its DNS name.
	contains(t, h.must("test", "rel"), "rel-test-web", "Succeeded")

	// A server-side dry run renders with lookup and changes nothing.
	contains(t, h.must("upgrade", "rel", h.chart, "-f", values, "--set", "message=dry", "--dry-run=server"),
		`message: "dry"`, `site: "plainkube"`)
	if got := h.get("configmap", "rel-config", "-o", "jsonpath={.data.message}"); got != "one" {
		t.Fatalf("after a dry run the ConfigMap says %q", got)
	}

	// upgrade --install with a new value rolls the Deployment (the pod
	// template carries the ConfigMap's checksum).
	h.must("upgrade", "--install", "rel", h.chart, "-f", values, "--set", "message=two", "--wait", "--wait-for-jobs", "--timeout", "3m")
	if got := h.get("configmap", "rel-config", "-o", "jsonpath={.data.message}"); got != "two" {
		t.Fatalf("after the upgrade the ConfigMap says %q", got)
	}
	if got := h.get("replicasets", "-l", "app=rel-web", "-o", "jsonpath={range .items[*]}{.spec.replicas} {end}"); got != "0 2 " && got != "2 0 " {
		t.Fatalf("after the upgrade the ReplicaSets' replicas are %q, want one of 2 and one of 0", got)
	}
	h.hooksRan(2, "pre-upgrade", "post-upgrade")
	contains(t, h.must("test", "rel"), "Succeeded")
	contains(t, h.must("history", "rel"), "superseded", "Install complete", "deployed", "Upgrade complete")

	h.must("rollback", "rel", "1", "--wait", "--timeout", "3m")
	if got := h.get("configmap", "rel-config", "-o", "jsonpath={.data.message}"); got != "one" {
		t.Fatalf("after the rollback the ConfigMap says %q", got)
	}
	// A rollback runs the hooks of the revision it returns to, as they
	// were rendered for it.
	h.hooksRan(1, "pre-rollback", "post-rollback")
	contains(t, h.must("history", "rel"), "Rollback to 1")

	// An upgrade whose pods never become ready is rolled back by helm.
	rollbackOnFailure := "--atomic"
	if h.major == "v4" {
		rollbackOnFailure = "--rollback-on-failure"
	}
	contains(t, h.mustFail("upgrade", "rel", h.chart, "-f", values, "--set", "message=broken", "--set", "image=busybox:missing",
		rollbackOnFailure, "--timeout", "20s"), "rolled back")
	contains(t, h.must("status", "rel"), "STATUS: deployed", "REVISION: 5")
	if got := h.get("configmap", "rel-config", "-o", "jsonpath={.data.message}"); got != "one" {
		t.Fatalf("after the failed upgrade was rolled back the ConfigMap says %q", got)
	}

	// helm v3 updates with three-way merge patches; v4 applies server-side.
	managers := h.get("deployment", "rel-web", "--show-managed-fields", "-o", "jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}")
	want := "helm/Update"
	if h.major == "v4" {
		want = "helm/Apply"
	}
	if !strings.Contains(managers, want) {
		t.Fatalf("the Deployment's managers are %q, want %s", managers, want)
	}

	h.must("uninstall", "rel", "--keep-history", "--wait", "--timeout", "2m")
	h.hooksRan(1, "pre-delete") // revision 5 is revision 3's, which is 1's
	for _, kind := range []string{"deployment/rel-web", "service/rel-web", "configmap/rel-config", "widget/rel-widget"} {
		if out, err := c.run("get", "-n", h.namespace, kind); err == nil {
			t.Fatalf("uninstall left %s: %s", kind, out)
		}
	}
	contains(t, h.must("history", "rel"), "uninstalled")
	contains(t, h.must("list", "--uninstalled"), "rel")
	h.must("uninstall", "rel")
	contains(t, h.mustFail("history", "rel"), "not found")
	// helm never deletes CRDs.
	c.must("get", "crd", "widgets.e2e.plainkube.dev")
}

// installed checks what the web chart's release made once helm said it
// was done: the ConfigMap says message and the site found by lookup, the
// Deployment's 2 replicas are ready (--wait) and the Job completed
// (--wait-for-jobs).
func (h *helmRun) installed(release, message string) {
	h.t.Helper()
	if got := h.get("configmap", release+"-config", "-o", "jsonpath={.data.message}/{.data.site}"); got != message+"/plainkube" {
		h.t.Fatalf("ConfigMap %s-config: message/site = %q, want %s/plainkube (site looked up)", release, got, message)
	}
	if got := h.get("deployment", release+"-web", "-o", "jsonpath={.status.readyReplicas}"); got != "2" {
		h.t.Fatalf("ready before the Deployment was: %q ready replicas, want 2", got)
	}
	if got := h.get("job", release+"-setup", "-o", "jsonpath={.status.succeeded}"); got != "1" {
		h.t.Fatalf("ready before the Job completed: succeeded = %q", got)
	}
}

// hooksRan checks that the hooks of the given events ran, rendered for
// revision:
// each event's Job ran and was deleted (hook-succeeded), then its
// ConfigMap (a later weight) was made.
func (h *helmRun) hooksRan(revision int, events ...string) {
	h.t.Helper()
	for _, event := range events {
		if got := h.get("configmap", "rel-ran-"+event, "-o", "jsonpath={.data.revision}"); got != fmt.Sprint(revision) {
			h.t.Fatalf("hook %s: its ConfigMap says revision %q, want %d", event, got, revision)
		}
		if out, err := h.c.run("get", "-n", h.namespace, "job", "rel-"+event); err == nil {
			h.t.Fatalf("hook %s: its Job was not deleted (hook-succeeded): %s", event, out)
		}
	}
}
