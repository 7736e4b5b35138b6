package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubectlServiceAccountToken: `kubectl create token` prints a token
// that `kubectl auth whoami --token` (with no kubeconfig, as in a pod)
// accepts, and a new pod gets the service-account token volume.
func TestKubectlServiceAccountToken(t *testing.T) {
	c := startCluster(t)
	c.eventually([]string{"default"}, "get", "serviceaccount", "default", "-o", "name")
	token := strings.TrimSpace(c.must("create", "token", "default"))
	empty := writeFile(t, t.TempDir(), "empty.kubeconfig", "")
	out, err := c.run("--kubeconfig", empty, "--server", fmt.Sprintf("https://127.0.0.1:%d", c.port),
		"--certificate-authority", filepath.Join(c.dataDir, "pki", "ca.crt"), "--token", token, "auth", "whoami")
	if err != nil {
		t.Fatalf("kubectl auth whoami --token: %v\n%s", err, out)
	}
	contains(t, out, "system:serviceaccount:default:default", "system:serviceaccounts:default", "system:authenticated")

	c.must("run", "sa-pod", "--image", "busybox", "--restart", "Never")
	out = c.must("get", "pod", "sa-pod", "-o", "jsonpath={.spec.serviceAccountName} {.spec.volumes[0].name} {.spec.containers[0].volumeMounts[0].mountPath}")
	contains(t, out, "default kube-api-access-", " /var/run/secrets/kubernetes.io/serviceaccount")
}
