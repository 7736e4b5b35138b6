package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// realNode skips unless real containers can run here, then starts a
// cluster with its node, waits for the node and builds busybox:e2e.
func realNode(t *testing.T, links string) (*cluster, string) {
	requireRealNode(t)
	c := startCluster(t, "--enable-node")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", c.log.String())
		}
	})
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	buildBusybox(t, c.dataDir, links)
	node := strings.TrimSpace(c.must("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"))
	return c, node
}

// TestStaticPods puts a pod manifest in the server's manifests folder: the
// node runs it and mirrors it into the API (kube-system), a deleted mirror
// comes back, an edit restarts it with the new spec, and removing the file
// stops it and deletes the mirror.
func TestStaticPods(t *testing.T) {
	c, node := realNode(t, "sh,sleep")
	manifest := filepath.Join(c.dataDir, "manifests", "sleeper.yaml")
	// Containers outlive the server: stop the static pod before it stops
	// (cleanups run last first).
	t.Cleanup(func() {
		if _, err := os.Stat(manifest); err == nil {
			os.Remove(manifest)
			c.eventually([]string{"NotFound"}, "get", "pod", "sleeper-"+node, "-n", "kube-system")
		}
	})
	const spec = `apiVersion: v1
kind: Pod
metadata:
  name: sleeper
  namespace: kube-system
  labels: {tier: control-plane}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "sleep 3600"]
`
	writeFile(t, filepath.Dir(manifest), "sleeper.yaml", spec)
	name := "sleeper-" + node
	c.eventually([]string{name, "Running"}, "get", "pods", "-n", "kube-system")
	meta := c.must("get", "pod", name, "-n", "kube-system", "-o",
		`jsonpath={.metadata.annotations.kubernetes\.io/config\.mirror} {.metadata.annotations.kubernetes\.io/config\.hash} {.metadata.annotations.kubernetes\.io/config\.source} {.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.spec.nodeName} {.metadata.uid}`)
	f := strings.Fields(meta)
	if len(f) != 6 || f[0] != f[1] || f[2] != "file" || f[3] != "Node/"+node || f[4] != node {
		t.Fatalf("mirror pod metadata: %q", meta)
	}
	hash, uid := f[0], f[5]

	// The mirror annotation is the API's to guard.
	out := c.mustFail("annotate", "pod", name, "-n", "kube-system", "--overwrite", "kubernetes.io/config.mirror=x")
	contains(t, out, "may not remove or update mirror pod annotation")

	// Deleted, the mirror comes back (a new object), the pod still runs.
	c.must("delete", "pod", name, "-n", "kube-system", "--timeout=30s")
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := c.run("get", "pod", name, "-n", "kube-system", "-o", "jsonpath={.metadata.uid} {.status.phase} {.status.containerStatuses[0].restartCount}")
		if f := strings.Fields(out); len(f) == 3 && f[0] != uid && f[1] == "Running" {
			if f[2] != "0" {
				t.Fatalf("container restarted when the mirror was deleted: %s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mirror pod did not come back: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Edited, the pod runs the new spec under a new hash.
	writeFile(t, filepath.Dir(manifest), "sleeper.yaml", strings.Replace(spec, "sleep 3600", "sleep 3601", 1))
	deadline = time.Now().Add(60 * time.Second)
	for {
		out, _ := c.run("get", "pod", name, "-n", "kube-system", "-o", `jsonpath={.metadata.annotations.kubernetes\.io/config\.hash} {.status.phase} {.spec.containers[0].command[2]}`)
		if f := strings.Fields(out); len(f) == 4 && f[0] != hash && f[1] == "Running" && f[3] == "3601" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("edited static pod: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Removed, it stops and its mirror goes.
	os.Remove(manifest)
	c.eventually([]string{"NotFound"}, "get", "pod", name, "-n", "kube-system")
}

// TestKubectlTop reads real usage through metrics.k8s.io with kubectl
// 1.32 and 1.33: the node's and a pod's that burns some CPU.
func TestKubectlTop(t *testing.T) {
	c, node := realNode(t, "sh,sleep")
	t.Cleanup(func() {
		c.run("delete", "pod", "burner", "--wait=false")
		c.eventually([]string{"No resources found"}, "get", "pods")
	})
	c.must("apply", "-f", writeFile(t, t.TempDir(), "burner.yaml", `apiVersion: v1
kind: Pod
metadata: {name: burner, labels: {app: burn}}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "while true; do i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; sleep 0.2; done"]
`))
	c.eventually([]string{"Running"}, "get", "pod", "burner")
	nodeRow := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(node) + `\s+([1-9][0-9]*)m\s+[0-9]+%\s+([1-9][0-9]*)Mi\s+[0-9]+%`)
	podRow := regexp.MustCompile(`(?m)^burner\s+([1-9][0-9]*)m\s+([0-9]+)Mi`)
	for _, version := range []string{"1.32", "1.33"} {
		k := *c
		k.kubectl = "/usr/lib/google-cloud-sdk/bin/kubectl." + version
		if _, err := os.Stat(k.kubectl); err != nil {
			t.Logf("kubectl %s is not installed; using %s", version, c.kubectl)
			k.kubectl = c.kubectl
		}
		k.t = t
		// Usage needs two samples of the pod (stats.Interval apart).
		deadline := time.Now().Add(60 * time.Second)
		for {
			out, _ := k.run("top", "pods")
			if podRow.MatchString(out) {
				t.Logf("kubectl %s top pods:\n%s", version, out)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("kubectl %s top pods: %s", version, out)
			}
			time.Sleep(time.Second)
		}
		out := k.must("top", "nodes")
		if !nodeRow.MatchString(out) {
			t.Fatalf("kubectl %s top nodes:\n%s", version, out)
		}
		t.Logf("kubectl %s top nodes:\n%s", version, out)
		contains(t, k.must("top", "pods", "-A", "-l", "app=burn"), "default", "burner")
		contains(t, k.must("top", "pod", "burner", "--containers"), "burner", " c ")
		contains(t, k.must("top", "node", node, "--no-headers"), node)
	}
	// Raw API objects, as metrics-server serves them.
	out := c.must("get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/burner")
	contains(t, out, `"kind":"PodMetrics"`, `"containers":[{"name":"c","usage":{"cpu":"`, `"window":"5s"`)
	contains(t, c.must("get", "nodemetrics"), node)
}
