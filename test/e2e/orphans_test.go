package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/procs"
)

// TestNewServerFindsOrphanedPods: a server stops with a pod running (pods
// outlive their node, as upstream's kubelet leaves them); a second server
// on a fresh data dir, given the same pod range, refuses to start its node
// and stops, naming the first one's files, instead of handing the pod's
// address out again. `plainkube cleanup` on the first data dir removes the
// pod (no shim left), and then the second server starts and runs pods.
func TestNewServerFindsOrphanedPods(t *testing.T) {
	requireRealNode(t)
	const cidr = "10.47.0.0/16" // a pod range of its own, away from other tests' bridges
	first := startCluster(t, "--enable-node", "--cluster-cidr", cidr)
	first.eventually([]string{"Ready"}, "get", "nodes")
	buildBusybox(t, first.dataDir, "sh,sleep")
	first.must("run", "old", "--image", "busybox:e2e", "--image-pull-policy", "Never", "--", "sleep", "600")
	first.must("wait", "--for=condition=Ready", "pod/old", "--timeout=60s")
	oldIP := first.must("get", "pod", "old", "-o", "jsonpath={.status.podIP}")
	// Stop the server only: its pod keeps running.
	first.cmd.Process.Signal(syscall.SIGTERM)
	first.cmd.Wait()
	first.cmd = nil
	t.Cleanup(func() { exec.Command(binary, "cleanup", "--data-dir", first.dataDir).Run() }) // if the test fails before its own
	if shims := shimsUnder(first.dataDir); shims == 0 {
		t.Fatal("no shim of the stopped server's pod runs: the test checks nothing")
	}

	second := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "server", "--data-dir", second, "--bind-address", "127.0.0.1",
		"--port", fmt.Sprint(freePort(t)), "--cluster-cidr", cidr).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the second server kept running with another node's pods on its bridge; its log:\n%s", out)
	}
	if err == nil {
		t.Fatalf("the second server exited without an error; its log:\n%s", out)
	}
	exec.Command(binary, "cleanup", "--data-dir", second).Run()
	contains(t, string(out), "pod bridge", "10.47.0.0/24", "carries pods of", "(1 attached)", filepath.Join(first.dataDir, "node"), "plainkube cleanup")
	t.Logf("the second server said: %s", lastLines(string(out), 3))

	out2, err := exec.Command(binary, "cleanup", "--data-dir", first.dataDir).CombinedOutput()
	if err != nil {
		t.Fatalf("cleanup: %v: %s", err, out2)
	}
	contains(t, string(out2), "removed 1 pods")
	if n := shimsUnder(first.dataDir); n != 0 {
		t.Errorf("%d shims of the first server's pods still run after cleanup", n)
	}

	c := startCluster(t, "--enable-node", "--cluster-cidr", cidr)
	c.eventually([]string{"Ready"}, "get", "nodes")
	buildBusybox(t, c.dataDir, "sh,sleep")
	c.must("run", "new", "--image", "busybox:e2e", "--image-pull-policy", "Never", "--", "sleep", "600")
	c.must("wait", "--for=condition=Ready", "pod/new", "--timeout=60s")
	t.Logf("the old pod had %s, the new one has %s", oldIP, c.must("get", "pod", "new", "-o", "jsonpath={.status.podIP}"))
}

// shimsUnder counts the containerd shims serving a containerd whose files
// are under dir.
func shimsUnder(dir string) int { return len(shims(dir + "/")) }

// shims lists the command lines of the containerd shims serving a
// containerd whose socket path starts with prefix.
func shims(prefix string) []string {
	var found []string
	for _, args := range procs.CommandLines() {
		if !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, prefix) }) {
			found = append(found, strings.Join(args, " "))
		}
	}
	return found
}

// podNetns counts the network namespaces containerd pinned for pods.
func podNetns() int {
	ents, _ := os.ReadDir("/var/run/netns")
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "cni-") {
			n++
		}
	}
	return n
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
