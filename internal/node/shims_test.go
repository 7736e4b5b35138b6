package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A fake shim is this test binary re-run with fakeShimEnv set: it only
// waits, under a shim's name and arguments.
const fakeShimEnv = "PLAINKUBE_TEST_FAKE_SHIM"

func init() {
	if os.Getenv(fakeShimEnv) == "1" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

func startFakeShim(t *testing.T, socket string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: self, Args: []string{"containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "x", "-address", socket},
		Env: append(os.Environ(), fakeShimEnv+"=1")}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// TestKillOrphanShims: the shims of this node's containerd socket are
// killed, another containerd's are left alone.
func TestKillOrphanShims(t *testing.T) {
	dir := t.TempDir()
	ours, theirs := filepath.Join(dir, "ours", "containerd.sock"), filepath.Join(dir, "theirs", "containerd.sock")
	orphan, other := startFakeShim(t, ours), startFakeShim(t, theirs)
	var reports []string
	deadline := time.Now().Add(10 * time.Second)
	for len(reports) == 0 && time.Now().Before(deadline) { // until /proc shows its command line
		killOrphanShims(ours, func(s string) { reports = append(reports, s) })
		time.Sleep(20 * time.Millisecond)
	}
	if len(reports) != 1 || !strings.Contains(reports[0], "killed the orphaned shim") {
		t.Fatalf("reports %q", reports)
	}
	done := make(chan error, 1)
	go func() { done <- orphan.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the orphan exited by itself, not killed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the orphaned shim still runs")
	}
	// Alive, not a zombie: its command line is still there.
	if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(other.Process.Pid), "cmdline")); err != nil || len(b) == 0 {
		t.Fatalf("the other containerd's shim was killed (%v)", err)
	}
}
