package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/mounts"
)

// binary is the plainkube binary built once for the package; nettool the
// test client and server run in pods (static: CGO_ENABLED=0).
var binary, nettool string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "plainkube-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "plainkube")
	build := exec.Command("../../hack/build.sh", binary)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building plainkube:", err)
		os.Exit(1)
	}
	nettool = filepath.Join(dir, "nettool")
	build = exec.Command("go", "build", "-o", nettool, "./nettool")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building nettool:", err)
		os.Exit(1)
	}
	netnsBefore := podNetns()
	code := m.Run()
	os.RemoveAll(dir)
	// Every test removes the pods its nodes ran (plainkube cleanup): no
	// shim of a containerd under a test's directory, and no pod network
	// namespace, may outlive the run.
	if left := shims(filepath.Join(os.TempDir(), "Test")); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d containerd shims outlive the tests:\n%s\n", len(left), strings.Join(left, "\n"))
		code = 1
	}
	if left := podNetns() - netnsBefore; left > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d more pod network namespaces (/var/run/netns/cni-*) after the tests than before\n", left)
		code = 1
	}
	os.Exit(code)
}

// kubectlPath is the kubectl under test: $KUBECTL, or the one on PATH.
func kubectlPath(t *testing.T) string {
	if p := os.Getenv("KUBECTL"); p != "" {
		return p
	}
	p, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is not installed: the end-to-end tests need the real kubectl binary")
	}
	return p
}

// cluster is one running `plainkube server`.
type cluster struct {
	t       *testing.T
	dataDir string
	port    int
	cmd     *exec.Cmd
	log     *bytes.Buffer
	kubectl string
	args    []string
	// withNode: the server runs its node, whose bridges and proxy table
	// outlive it (pods do) until `plainkube cleanup` removes them.
	withNode bool
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startCluster starts plainkube server on a fresh data dir and waits until
// kubectl can reach it.
// startCluster runs 'plainkube server' without a node agent unless
// serverArgs has "--enable-node" (then the server runs its default node).
func startCluster(t *testing.T, serverArgs ...string) *cluster {
	withNode := false
	var args []string
	for _, a := range serverArgs {
		if a == "--enable-node" {
			withNode = true
			continue
		}
		args = append(args, a)
	}
	if !withNode {
		args = append(args, "--disable-node")
	}
	serverArgs = args
	c := &cluster{t: t, dataDir: t.TempDir(), port: freePort(t), kubectl: kubectlPath(t), args: serverArgs, withNode: withNode}
	c.start()
	t.Cleanup(c.stop)
	return c
}

func (c *cluster) start() {
	c.t.Helper()
	c.log = &bytes.Buffer{}
	args := append([]string{"server", "--data-dir", c.dataDir, "--bind-address", "127.0.0.1", "--port", fmt.Sprint(c.port)}, c.args...)
	c.cmd = exec.Command(binary, args...)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(c.kubeconfig()); err == nil {
			if out, err := c.run("get", "--raw", "/readyz"); err == nil && strings.TrimSpace(out) == "ok" {
				return
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("server did not become ready; its log:\n%s", c.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cluster) stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
		c.t.Errorf("server did not stop within 10s of SIGTERM")
	}
	c.cmd = nil
	unmountUnder(c.dataDir)
	if c.withNode {
		// The proxy leaves its fence table and the pod bridges behind on
		// purpose (pods outlive a node agent); the test is done with them.
		if out, err := exec.Command(binary, "cleanup", "--data-dir", c.dataDir).CombinedOutput(); err != nil {
			c.t.Errorf("plainkube cleanup: %v: %s", err, out)
		}
	}
}

// unmountUnder detaches what a node agent left mounted under dir (the
// tmpfs of pods' secret and token volumes stays mounted, as upstream's
// kubelet leaves it, when the server stops with pods on its node), so that
// the test's temporary directory can be removed.
func unmountUnder(dir string) {
	points, _ := mounts.Under(dir)
	for i := len(points) - 1; i >= 0; i-- { // the latest mounts first
		syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}

// restart stops the server with SIGTERM and starts it again on the same
// data directory; what its node runs keeps running.
func (c *cluster) restart() {
	c.t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.cmd.Wait()
	c.start()
}

// kill stops the server with SIGKILL, as a crash would.
func (c *cluster) kill() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
	c.cmd = nil
}

func (c *cluster) kubeconfig() string { return filepath.Join(c.dataDir, "admin.kubeconfig") }

// run runs kubectl and returns its combined output.
func (c *cluster) run(args ...string) (string, error) {
	return c.runWith(nil, "", args...)
}

func (c *cluster) runWith(env []string, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.kubectl, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+c.kubeconfig(), "HOME="+c.dataDir), env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// must runs kubectl and fails the test on error.
func (c *cluster) must(args ...string) string {
	c.t.Helper()
	out, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// mustStdout runs kubectl and returns its standard output alone, failing the
// test on error: kubectl's own client warnings (stderr) are not the answer.
func (c *cluster) mustStdout(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig(), "HOME="+c.dataDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// eventually runs kubectl until its output contains all of wants, for up to
// two minutes.
func (c *cluster) eventually(wants []string, args ...string) string {
	c.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _ := c.run(args...)
		ok := true
		for _, w := range wants {
			ok = ok && strings.Contains(out, w)
		}
		if ok {
			return out
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("kubectl %s never showed %q; last output:\n%s", strings.Join(args, " "), wants, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// mustFail runs kubectl and fails the test if it succeeds.
func (c *cluster) mustFail(args ...string) string {
	c.t.Helper()
	out, err := c.run(args...)
	if err == nil {
		c.t.Fatalf("kubectl %s succeeded, want failure:\n%s", strings.Join(args, " "), out)
	}
	return out
}

func contains(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
