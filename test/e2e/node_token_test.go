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

// TestRealNodeServiceAccountToken: a pod on the real node reads the token
// the ServiceAccount admission plugin mounted (the node agent got it with a
// TokenRequest bound to the pod), and kubectl is that pod's service account
// with it — until the pod is deleted.
func TestRealNodeServiceAccountToken(t *testing.T) {
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
	out, err := exec.Command(binary, "image", "build", "--data-dir", c.dataDir, "--tag", "busybox:e2e", "--binary", "/bin/busybox", "--links", "sh,cat,sleep").CombinedOutput()
	if err != nil {
		t.Fatalf("image build: %v\n%s", err, out)
	}
	c.must("apply", "-f", writeFile(t, t.TempDir(), "pod.yaml", `apiVersion: v1
kind: Pod
metadata: {name: tok}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; cat /var/run/secrets/kubernetes.io/serviceaccount/token; echo; sleep 3600"]
`))
	c.eventually([]string{"Running"}, "get", "pod", "tok")
	var lines []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := c.run("logs", "tok")
		lines = strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl logs: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if lines[0] != "default" {
		t.Errorf("namespace file %q", lines[0])
	}
	empty := writeFile(t, t.TempDir(), "empty.kubeconfig", "")
	whoami := func() string {
		out, _ := c.run("--kubeconfig", empty, "--server", fmt.Sprintf("https://127.0.0.1:%d", c.port),
			"--certificate-authority", filepath.Join(c.dataDir, "pki", "ca.crt"), "--token", lines[1], "auth", "whoami")
		return out
	}
	contains(t, whoami(), "system:serviceaccount:default:default", "authentication.kubernetes.io/pod-name", "[tok]")
	c.must("delete", "pod", "tok", "--timeout=30s")
	contains(t, whoami(), "Unauthorized")
}
