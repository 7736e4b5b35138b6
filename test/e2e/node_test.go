package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRealNode runs a real container with the node agent on containerd
// (root only) and reads its log through the API server with kubectl.
func TestRealNode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: running real containers needs root (CI runs as root)")
	}
	for _, bin := range []string{"containerd", "runc", "ctr"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipping: %s is not installed (apt-get install containerd runc)", bin)
		}
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("skipping: /bin/busybox (busybox-static) is not installed")
	}
	c := startCluster(t, "--enable-node")
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	out, err := exec.Command(binary, "image", "build", "--data-dir", c.dataDir, "--tag", "busybox:e2e", "--binary", "/bin/busybox", "--links", "sh,echo,sleep").CombinedOutput()
	if err != nil {
		t.Fatalf("image build: %v\n%s", err, out)
	}
	c.must("apply", "-f", writeFile(t, t.TempDir(), "pod.yaml", `apiVersion: v1
kind: Pod
metadata: {name: hello}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "echo hello-from-a-container; echo second line; sleep 3600"]
`))
	c.eventually([]string{"Running"}, "get", "pod", "hello")
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := c.run("logs", "hello")
		if strings.Contains(out, "hello-from-a-container\nsecond line") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl logs: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out := c.must("logs", "hello", "--tail=1"); strings.TrimSpace(out) != "second line" {
		t.Fatalf("logs --tail=1: %q", out)
	}
	c.must("delete", "pod", "hello", "--timeout=30s")
}
