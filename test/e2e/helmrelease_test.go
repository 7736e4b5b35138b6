package e2e

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// TestHelmRelease drives the helm controller (HelmRelease,
// helm.plainkube.dev/v1) on a real node: a chart from a ConfigMap with
// values and valuesFrom is installed (real helm v4 lists the release),
// upgraded, its drift corrected, a bad value reported as Ready=False and
// mended, an upgrade interrupted by killing the server completed after the
// restart, and the release uninstalled when the HelmRelease is deleted;
// charts from an HTTP repository and an OCI registry (both on loopback)
// are installed too. Root only.
func TestHelmRelease(t *testing.T) {
	requireRealNode(t)
	helm := helmBinary(t, "v4")
	c := startCluster(t, "--enable-node", "--cluster-cidr", "10.49.0.0/16")
	t.Cleanup(func() {
		// Each release is uninstalled (its finalizer) before the pods are
		// counted: the uninstall's pre-delete hook makes a pod of its own,
		// which a stop in the middle of its start would leave behind.
		c.run("delete", "helmreleases", "--all", "-A", "--wait=false")
		c.eventually([]string{"No resources found"}, "get", "helmreleases", "-A")
		c.run("delete", "namespace", "hr", "repo", "--wait=false")
		c.eventually([]string{"No resources found"}, "get", "pods", "-A")
	})
	t.Cleanup(func() {
		if t.Failed() {
			for _, line := range strings.Split(c.log.String(), "\n") {
				if strings.Contains(line, "helmrelease") {
					t.Log(line)
				}
			}
		}
	})
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	buildBusybox(t, c.dataDir, "sh,echo,sleep,cat,httpd,mkdir")
	h := &helmRun{t: t, c: c, bin: helm, major: "v4", namespace: "hr"}
	packages := t.TempDir()
	h.must("package", "testdata/helm/web", "-d", packages)
	h.must("package", "testdata/helm/web/charts/cache", "-d", packages)

	c.must("create", "namespace", "hr")
	c.must("create", "configmap", "site-config", "-n", "hr", "--from-literal=site=plainkube")
	c.must("create", "configmap", "web-chart", "-n", "hr", "--from-file=chart.tgz="+filepath.Join(packages, "web-0.1.0.tgz"))
	c.must("create", "configmap", "web-values", "-n", "hr", "--from-literal=values.yaml=jobSeconds: 1\nmessage: from-values-from\n")
	apply := func(values string) {
		t.Helper()
		c.must("apply", "-f", writeFile(t, t.TempDir(), "hr.yaml", `apiVersion: helm.plainkube.dev/v1
kind: HelmRelease
metadata: {name: web, namespace: hr}
spec:
  chart: {configMapRef: {name: web-chart, key: chart.tgz}}
  valuesFrom: [{kind: ConfigMap, name: web-values}]
  driftPolicy: Correct
  install: {timeout: 3m}
  upgrade: {timeout: 3m}
  values: {`+values+`}
`))
	}
	apply("message: one, replicas: 2")
	waitReady(t, c, "True", "web")
	contains(t, c.must("get", "-n", "hr", "helmrelease", "web"), "CHART", "VERSION", "REVISION", "READY", "STATUS", "web", "0.1.0", "1", "True", "deployed")
	h.installed("web", "one") // spec.values over valuesFrom
	// The real helm sees the controller's release.
	contains(t, h.must("list"), "web", "deployed", "web-0.1.0")
	contains(t, c.must("get", "events", "-n", "hr", "--field-selector", "involvedObject.kind=HelmRelease"), "InstallSucceeded")

	// A new value upgrades the release.
	apply("message: two, replicas: 2")
	waitHR(t, c, "2/True", "a new value")
	if got := h.get("configmap", "web-config", "-o", "jsonpath={.data.message}"); got != "two" {
		t.Fatalf("after the upgrade ConfigMap says %q", got)
	}
	contains(t, h.must("history", "web"), "superseded", "deployed", "Upgrade by the helm controller")

	// Drift: scaled by hand, put back at the next reconcile (any change to
	// the HelmRelease asks for one; otherwise every 5 minutes).
	c.must("scale", "-n", "hr", "deployment/web-web", "--replicas=1")
	c.must("annotate", "-n", "hr", "helmrelease/web", "e2e/poke=1")
	waitFor(t, time.Minute, "drift corrected", func() (bool, string) {
		out, _ := c.run("get", "-n", "hr", "deployment/web-web", "-o", "jsonpath={.spec.replicas}")
		return out == "2", out
	})
	// Only what was changed is listed (helm's own labels and annotations
	// on the objects are not drift).
	if got := c.mustStdout("get", "-n", "hr", "helmrelease", "web", "-o", `jsonpath={.status.conditions[?(@.type=="Drifted")].message}`); got != "Corrected: Deployment/web-web" {
		t.Fatalf("Drifted condition: %q", got)
	}

	// Values the chart's schema refuses: Ready=False with helm's words,
	// nothing changed; then mended.
	apply("message: two, replicas: -1")
	waitFor(t, time.Minute, "Ready=False", func() (bool, string) {
		out, _ := c.run("get", "-n", "hr", "helmrelease", "web", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Failed")].message}`)
		return strings.HasPrefix(out, "False ") && strings.Contains(out, "replicas"), out
	})
	if got := h.get("deployment", "web-web", "-o", "jsonpath={.spec.replicas}"); got != "2" {
		t.Fatalf("a refused upgrade changed the Deployment: replicas %q", got)
	}
	apply("message: three, replicas: 2")
	waitHR(t, c, "3/True", "mended values")

	// The server killed while the controller's upgrade waits in a slow
	// pre-upgrade hook: after the restart the release is unlocked and the
	// upgrade made again.
	apply("message: four, replicas: 2, hookSeconds: 15")
	waitFor(t, time.Minute, "pending-upgrade", func() (bool, string) {
		out, _ := h.run("status", "web")
		return strings.Contains(out, "STATUS: pending-upgrade"), out
	})
	c.kill()
	c.start()
	// Revision 4 was interrupted; 5 is the upgrade made again.
	waitHR(t, c, "5/True", "the interrupted upgrade made again")
	if got := h.get("configmap", "web-config", "-o", "jsonpath={.data.message}"); got != "four" {
		t.Fatalf("after the interrupted upgrade ConfigMap says %q", got)
	}
	contains(t, h.must("history", "web"), "Marked failed by the helm controller", "deployed")
	contains(t, h.must("status", "web"), "STATUS: deployed")

	// Charts from an HTTP repository and an OCI registry, on loopback.
	repoDir := t.TempDir()
	for _, f := range []string{"cache-0.1.0.tgz"} {
		b, err := os.ReadFile(filepath.Join(packages, f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, repoDir, f, string(b))
	}
	repoURL := serveLoopback(t, http.FileServer(http.Dir(repoDir)))
	h.must("repo", "index", repoDir, "--url", repoURL)
	registryURL := serveLoopback(t, registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	out, err := exec.Command(helm, "push", filepath.Join(packages, "cache-0.1.0.tgz"), "oci://"+strings.TrimPrefix(registryURL, "http://")+"/charts", "--plain-http").CombinedOutput()
	if err != nil {
		t.Fatalf("helm push: %v\n%s", err, out)
	}
	c.must("apply", "-f", writeFile(t, t.TempDir(), "repo.yaml", fmt.Sprintf(`apiVersion: helm.plainkube.dev/v1
kind: HelmRelease
metadata: {name: from-repo, namespace: hr}
spec:
  chart: {repoURL: %q, name: cache}
  version: "0.1.x"
  targetNamespace: repo
  createNamespace: true
  values: {size: 128}
---
apiVersion: helm.plainkube.dev/v1
kind: HelmRelease
metadata: {name: from-oci, namespace: hr}
spec:
  chart: {oci: %q, plainHTTP: true}
  version: 0.1.0
---
apiVersion: helm.plainkube.dev/v1
kind: HelmRelease
metadata: {name: unreachable, namespace: hr}
spec:
  chart: {repoURL: "http://127.0.0.1:1/", name: cache}
`, repoURL, "oci://"+strings.TrimPrefix(registryURL, "http://")+"/charts/cache")))
	waitReady(t, c, "True", "from-repo", "from-oci")
	waitReady(t, c, "False", "unreachable")
	contains(t, c.must("get", "-n", "hr", "helmrelease", "unreachable", "-o", `jsonpath={.status.conditions[?(@.type=="Failed")].message}`),
		"cannot be read")
	if got := c.mustStdout("get", "-n", "repo", "configmap", "from-repo-cache", "-o", "jsonpath={.data.size}"); got != "128" {
		t.Fatalf("the repository chart's ConfigMap: size %q", got)
	}
	if got := h.get("configmap", "from-oci-cache", "-o", "jsonpath={.data.size}"); got != "64" {
		t.Fatalf("the OCI chart's ConfigMap: size %q", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(c.dataDir, "helm", "content")); len(entries) == 0 {
		t.Errorf("no chart kept in the data dir's cache")
	}

	helmReleaseFromPath(t, c)

	// Deleting a HelmRelease uninstalls its release.
	c.must("delete", "-n", "hr", "helmrelease", "web", "--timeout=2m")
	if out, err := h.run("status", "web"); err == nil {
		t.Fatalf("the release outlived its HelmRelease: %s", out)
	}
	if out, err := c.run("get", "-n", "hr", "deployment/web-web"); err == nil {
		t.Fatalf("the Deployment outlived the release: %s", out)
	}
}

// waitHR waits until the HelmRelease hr/web has the applied revision and
// Ready status in want ("2/True").
func waitHR(t *testing.T, c *cluster, want, what string) {
	t.Helper()
	waitFor(t, 3*time.Minute, what, func() (bool, string) {
		out, _ := c.run("get", "-n", "hr", "helmrelease", "web", "-o",
			`jsonpath={.status.lastAppliedRevision}/{.status.conditions[?(@.type=="Ready")].status}`)
		return out == want, out
	})
}

// waitReady waits until the Ready condition of each HelmRelease (in hr)
// has status want.
func waitReady(t *testing.T, c *cluster, want string, names ...string) {
	t.Helper()
	for _, name := range names {
		waitFor(t, 3*time.Minute, "HelmRelease "+name+" Ready="+want, func() (bool, string) {
			out, _ := c.run("get", "-n", "hr", "helmrelease", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			return out == want, out
		})
	}
}

// serveLoopback serves h on a loopback port until the test ends.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// helmReleaseFromPath keeps a release of a chart in a directory on the
// server (ConfigMaps and a CRD only): crds: CreateReplace replaces the CRD
// when the chart's changes, driftPolicy: Report reports a changed object
// and leaves it, a chart that does not render is Ready=False until mended,
// and a suspended HelmRelease is left alone until resumed.
func helmReleaseFromPath(t *testing.T, c *cluster) {
	dir := t.TempDir()
	writeFile(t, dir, "Chart.yaml", "apiVersion: v2\nname: local\nversion: 0.2.0\n")
	writeFile(t, dir, "values.yaml", "color: red\n")
	os.Mkdir(filepath.Join(dir, "templates"), 0o755)
	os.Mkdir(filepath.Join(dir, "crds"), 0o755)
	template := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local}\ndata: {color: {{ .Values.color | quote }}}\n"
	writeFile(t, filepath.Join(dir, "templates"), "cm.yaml", template)
	crd := func(column string) {
		writeFile(t, filepath.Join(dir, "crds"), "gadgets.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.e2e.plainkube.dev}
spec:
  group: e2e.plainkube.dev
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    additionalPrinterColumns: [{name: `+column+`, type: string, jsonPath: .spec.x}]
`)
	}
	crd("First")
	apply := func(spec string) {
		t.Helper()
		c.must("apply", "-f", writeFile(t, t.TempDir(), "local.yaml", `apiVersion: helm.plainkube.dev/v1
kind: HelmRelease
metadata: {name: local, namespace: hr}
spec:
  chart: {path: `+dir+`}
  crds: CreateReplace
  driftPolicy: Report
`+spec))
	}
	poke := func(n int) {
		c.must("annotate", "--overwrite", "-n", "hr", "helmrelease/local", fmt.Sprintf("e2e/poke=%d", n))
	}
	localRevision := func(want string) {
		t.Helper()
		waitFor(t, time.Minute, "HelmRelease local at "+want, func() (bool, string) {
			out, _ := c.run("get", "-n", "hr", "helmrelease", "local", "-o",
				`jsonpath={.status.lastAppliedRevision}/{.status.conditions[?(@.type=="Ready")].status}`)
			return out == want, out
		})
	}
	apply("")
	localRevision("1/True")
	c.must("get", "crd", "gadgets.e2e.plainkube.dev")

	// The chart's CRD changes: the upgrade replaces it.
	crd("Second")
	poke(1)
	localRevision("2/True")
	if got := c.mustStdout("get", "crd", "gadgets.e2e.plainkube.dev", "-o", "jsonpath={.spec.versions[0].additionalPrinterColumns[0].name}"); got != "Second" {
		t.Fatalf("CreateReplace left the CRD's column %q", got)
	}

	// Report: drift is reported and left as it is.
	c.must("patch", "-n", "hr", "configmap", "local", "-p", `{"data":{"color":"blue"}}`)
	poke(2)
	waitFor(t, time.Minute, "Drifted=True", func() (bool, string) {
		out, _ := c.run("get", "-n", "hr", "helmrelease", "local", "-o", `jsonpath={.status.conditions[?(@.type=="Drifted")].status} {.status.conditions[?(@.type=="Drifted")].message}`)
		return out == "True Differs from the release's manifest: ConfigMap/local", out
	})
	if got := c.mustStdout("get", "-n", "hr", "configmap", "local", "-o", "jsonpath={.data.color}"); got != "blue" {
		t.Fatalf("Report changed the ConfigMap back: %q", got)
	}

	// A template that does not render: Ready=False with helm's error, the
	// release as it was.
	writeFile(t, filepath.Join(dir, "templates"), "cm.yaml", "{{ .Values.color | nosuchfunction }}\n")
	poke(3)
	waitFor(t, time.Minute, "Ready=False", func() (bool, string) {
		out, _ := c.run("get", "-n", "hr", "helmrelease", "local", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`)
		return strings.HasPrefix(out, "False ") && strings.Contains(out, "nosuchfunction"), out
	})
	// Mended, the chart is revision 2's again: nothing to upgrade, Ready.
	writeFile(t, filepath.Join(dir, "templates"), "cm.yaml", template)
	poke(4)
	localRevision("2/True")

	// Suspended: a new value waits until the HelmRelease is resumed.
	apply("  suspend: true\n  values: {color: green}\n")
	time.Sleep(3 * time.Second)
	localRevision("2/True")
	apply("  values: {color: green}\n")
	localRevision("3/True")
	if got := c.mustStdout("get", "-n", "hr", "configmap", "local", "-o", "jsonpath={.data.color}"); got != "green" {
		t.Fatalf("after resuming the ConfigMap says %q", got)
	}
	c.must("delete", "-n", "hr", "helmrelease", "local")
}
