package kubelet_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/image"
	"plainkube.dev/plainkube/internal/image/pause"
	"plainkube.dev/plainkube/internal/kubelet"
	"plainkube.dev/plainkube/internal/kubelet/containerd"
	"plainkube.dev/plainkube/internal/kubelet/network"
)

// TestRuntimeEndpoint runs the agent against a containerd it did not
// start (Options.RuntimeEndpoint, as --container-runtime-endpoint): the
// test starts it, the agent finds its CNI conf_dir in its CRI status,
// imports the pause image into it, runs a pod on the pod network, and
// leaves it running when it stops.
func TestRuntimeEndpoint(t *testing.T) {
	var endpoint string
	var rt *containerd.Process
	cs, dir := startNodeWith(t, network.DefaultPodCIDR, func(o *kubelet.Options) {
		rt = o.Runtime
		endpoint = rt.Endpoint()
		o.Runtime, o.RuntimeEndpoint = nil, endpoint
	})
	ctx := context.Background()
	refs, err := image.List(ctx, rt.Socket())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range refs {
		found = found || r == pause.Ref
	}
	if !found {
		t.Errorf("pause image not imported into the containerd at %s: %v", endpoint, refs)
	}

	pod := busyboxPod("on-external", corev1.RestartPolicyNever, "sleep 300")
	pod.Spec.HostNetwork = false
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the pod running with a pod IP", func(ctx context.Context) (bool, error) {
		p, err := getPod(ctx, cs, "on-external")
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", nil
	})
	p, _ := getPod(ctx, cs, "on-external")
	ip, err := netip.ParseAddr(p.Status.PodIP)
	if err != nil || !netip.MustParsePrefix(network.DefaultPodCIDR).Contains(ip) {
		t.Errorf("pod IP %q not in %s", p.Status.PodIP, network.DefaultPodCIDR)
	}
	// The network was written where that containerd reads it.
	if _, err := os.Stat(filepath.Join(rt.CNIConfDir(), "10-plainkube.conflist")); err != nil {
		t.Errorf("CNI configuration not in the containerd's conf_dir: %v", err)
	}
	_ = dir
	sbs, err := rt.Runtime.ListPodSandbox(ctx, nil)
	if err != nil || len(sbs) == 0 {
		t.Errorf("the containerd at the endpoint runs no sandbox: %v", err)
	}
}
