package e2e

import (
	"fmt"
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
	requireRealNode(t)
	c := startCluster(t, "--enable-node")
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	buildBusybox(t, c.dataDir, "sh,cat,sleep")
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
