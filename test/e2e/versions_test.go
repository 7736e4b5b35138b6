package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestKubectlVersions runs the everyday commands with each kubectl release
// the machine has side by side (1.32 and 1.33 at least), since clients of
// different versions negotiate discovery, OpenAPI and tables differently.
func TestKubectlVersions(t *testing.T) {
	found := 0
	for _, v := range []string{"1.31", "1.32", "1.33"} {
		bin := filepath.Join("/usr/lib/google-cloud-sdk/bin", "kubectl."+v)
		if _, err := os.Stat(bin); err != nil {
			continue
		}
		found++
		t.Run(v, func(t *testing.T) {
			t.Setenv("KUBECTL", bin)
			c := startCluster(t)
			dir := t.TempDir()
			f := writeFile(t, dir, "web.yaml", fmt.Sprintf(webDeployment, 2))
			contains(t, c.must("apply", "-f", f), "deployment.apps/web created")
			writeFile(t, dir, "web.yaml", fmt.Sprintf(webDeployment, 3))
			contains(t, c.must("apply", "-f", f), "deployment.apps/web configured")
			contains(t, c.must("apply", "--server-side", "--force-conflicts", "-f", f), "serverside-applied")
			contains(t, c.must("get", "deploy,svc"), "UP-TO-DATE", "CLUSTER-IP", "web")
			c.eventually([]string{"NAMESPACE", "web-"}, "get", "po", "-A") // the deployment's pods, Pending without nodes
			contains(t, c.must("api-resources"), "deployments", "deploy")
			contains(t, c.must("explain", "deployment.spec.strategy"), "rollingUpdate")
			contains(t, c.must("auth", "can-i", "delete", "nodes"), "yes")
			c.must("delete", "-f", f, "--wait")
		})
	}
	if found < 2 {
		t.Fatalf("found %d of the side-by-side kubectl releases under /usr/lib/google-cloud-sdk/bin; want 1.32 and 1.33", found)
	}
}
