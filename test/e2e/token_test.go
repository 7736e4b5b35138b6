package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTokenCommands: the server prints its join command once, with the
// token's expiry; `plainkube token create|list|delete` make, show and
// revoke bootstrap tokens, and a made token authenticates a joining host
// (it may list CSRs) until it is deleted.
func TestTokenCommands(t *testing.T) {
	c := startCluster(t)
	contains(t, serverSays(c, "plainkube agent --server https://"), "join another host (as root) until ")
	token := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(binary, append([]string{"token"}, append(args, "--data-dir", c.dataDir)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("plainkube token %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	join := token("create", "--ttl", "2h", "--description", "e2e host", "--print-join-command")
	fields := strings.Fields(join)
	if len(fields) != 8 || fields[0] != "plainkube" || fields[4] != "--token" || !strings.HasPrefix(fields[7], "sha256:") ||
		fields[3] != fmt.Sprintf("https://127.0.0.1:%d", c.port) {
		t.Fatalf("join command %q", join)
	}
	tok := fields[5]
	list := token("list")
	contains(t, list, "TOKEN", "EXPIRES", tok, "e2e host", "system:bootstrappers:plainkube", "authentication")
	// The token authenticates (kubectl with it and the CA only).
	asHost := func() (string, error) {
		return c.run("--kubeconfig", "/dev/null", "--server", fields[3], "--certificate-authority", filepath.Join(c.dataDir, "pki", "ca.crt"),
			"--token", tok, "get", "csr")
	}
	if out, err := asHost(); err != nil {
		t.Fatalf("the new token does not authenticate: %v\n%s", err, out)
	}
	contains(t, token("delete", tok), "deleted")
	if out, err := asHost(); err == nil || !strings.Contains(out, "Unauthorized") {
		t.Fatalf("a deleted token still works: %v\n%s", err, out)
	}
	if strings.Contains(token("list"), tok) {
		t.Fatal("token list shows a deleted token")
	}
	// A restart does not print the token again.
	c.restart()
	if out := serverSays(c, "plainkube token create --print-join-command"); strings.Contains(out, "--token") {
		t.Fatalf("restarted server's output:\n%s", out)
	}
}

// serverSays waits up to 10 s for the server's output to contain want (it
// prints what it has to say once it serves) and returns that output.
func serverSays(c *cluster, want string) string {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := c.log.String()
		if strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the server never said %q:\n%s", want, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
