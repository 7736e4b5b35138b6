package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPlainkubeKubectl: 'plainkube kubectl' is kubectl of the release
// plainkube serves, with KUBECONFIG or --kubeconfig as kubectl takes them.
func TestPlainkubeKubectl(t *testing.T) {
	c := startCluster(t, "--sim-nodes", "1")
	kubectl := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"kubectl"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("plainkube kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	waitFor(t, time.Minute, "sim-0 through plainkube kubectl", func() (bool, string) {
		out := kubectl([]string{"KUBECONFIG=" + c.kubeconfig()}, "get", "nodes", "-o", "name")
		return strings.Contains(out, "node/sim-0"), out
	})
	out := kubectl(nil, "--kubeconfig", c.kubeconfig(), "version", "-o", "json")
	contains(t, out, `"gitVersion": "v1.37.2"`, `"gitVersion": "v1.37.2-plainkube.0"`)
	kubectl(nil, "--kubeconfig="+c.kubeconfig(), "create", "configmap", "from-plainkube-kubectl", "--from-literal=k=v")
	if got := c.must("get", "configmap", "from-plainkube-kubectl", "-o", "jsonpath={.data.k}"); got != "v" {
		t.Fatalf("configmap made by plainkube kubectl: %q", got)
	}
	cmd := exec.Command(binary, "kubectl", "--kubeconfig", c.kubeconfig(), "get", "widgets")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), `the server doesn't have a resource type "widgets"`) {
		t.Fatalf("an unknown resource: %v\n%s", err, out)
	}
}
