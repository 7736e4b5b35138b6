package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// quickStart is the README's quick start: the sh block after its marker.
func quickStart(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "<!-- quick start: test/e2e/readme_test.go runs these lines as they are -->\n```sh\n")
	block, _, closed := strings.Cut(rest, "\n```\n")
	if !ok || !closed {
		t.Fatal("README.md has no quick start block after its marker")
	}
	return block
}

// TestReadmeQuickStart runs the README's quick start, line by line as a
// newcomer pastes it, against a fresh cluster with a real node: the image
// build, the web Deployment and its Service, scaling, a pod reaching it by
// name, logs, exec and port-forward. Two things differ from a newcomer's
// machine: the cluster's kubeconfig and data directory are the test's.
func TestReadmeQuickStart(t *testing.T) {
	requireRealNode(t)
	for _, tool := range []string{"nft", "curl", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	c := startCluster(t, "--enable-node", "--cluster-cidr", "10.51.0.0/16", "--dns-upstream", fakeUpstream(t))
	t.Cleanup(func() {
		c.run("delete", "deployment,pod", "--all", "--wait=false")
		c.eventually([]string{"No resources found"}, "get", "pods")
	})
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")

	var lines []string
	for _, line := range strings.Split(quickStart(t), "\n") {
		switch {
		case strings.HasPrefix(line, "export KUBECONFIG="):
			continue // the test's cluster's, in the environment
		case strings.HasPrefix(line, "bin/plainkube image build "):
			line = strings.Replace(line, "image build ", "image build --data-dir "+c.dataDir+" ", 1)
		}
		lines = append(lines, line)
	}
	// The repository as the README's commands see it: bin/plainkube and
	// examples/, with the kubectl under test first on PATH.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Abs("../../examples")
	for link, target := range map[string]string{"bin/plainkube": binary, "examples": examples, "bin/kubectl": kubectlPath(t)} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-x", "-c", strings.Join(lines, "\n"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig(), "PATH="+filepath.Join(dir, "bin")+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the quick start failed: %v\n%s", err, out)
	}
	// A web pod's name came back three times: to the client pod through
	// the Service, from exec, and through port-forward.
	names := regexp.MustCompile(`(?m)^web-[a-z0-9]+-[a-z0-9]+$`).FindAllString(string(out), -1)
	if len(names) < 3 {
		t.Fatalf("expected web pods' names from the client, exec and port-forward; got %q:\n%s", names, out)
	}
	// The pod port-forward reached logged the request.
	contains(t, string(out), "deployment.apps/web scaled", `deployment "web" successfully rolled out`, "HTTP/1.1 200 OK", "127.0.0.1]:", ": response:200")
}
