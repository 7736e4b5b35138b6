package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/kubelet/containerd"
)

// TestExternalContainerd runs `plainkube server --container-runtime-endpoint`
// against a containerd the test started (as a user's system containerd
// would be): images go into it with `plainkube image build
// --container-runtime-endpoint`, a pod runs on the pod network, and the
// containerd keeps running when the server stops.
func TestExternalContainerd(t *testing.T) {
	requireRealNode(t)
	ctx := context.Background()
	rt, err := containerd.Start(ctx, containerd.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rt.RemoveAllPods(cctx)
		rt.Stop()
	})
	c := startCluster(t, "--enable-node", "--cluster-cidr", "10.46.0.0/16", "--container-runtime-endpoint", rt.Endpoint())
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	out, err := exec.Command(binary, "image", "build", "--container-runtime-endpoint", rt.Endpoint(), "--tag", "busybox:ext",
		"--binary", "/bin/busybox", "--links", "sh,sleep").CombinedOutput()
	if err != nil {
		t.Fatalf("image build: %v\n%s", err, out)
	}
	c.must("run", "ext", "--image", "busybox:ext", "--image-pull-policy", "Never", "--", "sleep", "300")
	c.must("wait", "--for=condition=Ready", "pod/ext", "--timeout=60s")
	if ip := c.must("get", "pod", "ext", "-o", "jsonpath={.status.podIP}"); !strings.HasPrefix(ip, "10.46.") {
		t.Errorf("pod IP %q not from the cluster CIDR", ip)
	}
	node := strings.TrimPrefix(strings.TrimSpace(c.must("get", "nodes", "-o", "name")), "node/")
	contains(t, c.must("get", "--raw", "/api/v1/nodes/"+node+"/proxy/pods"), `"name":"ext"`)
	c.run("delete", "pod", "ext", "--grace-period=1")
	c.stop()
	if _, err := rt.Version(ctx); err != nil {
		t.Errorf("the containerd at the endpoint stopped with the server: %v", err)
	}
}
