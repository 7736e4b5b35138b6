package kubelet_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"plainkube.dev/plainkube/internal/image"
	"plainkube.dev/plainkube/internal/kubelet"
	"plainkube.dev/plainkube/internal/kubelet/containerd"
)

// TestStaticPodWithoutAPIServer runs a static pod while the API server
// does not answer: the agent keeps trying to register, and meanwhile runs
// the manifest's container.
func TestStaticPodWithoutAPIServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run containerd")
	}
	if err := containerd.CheckInstalled(""); err != nil {
		t.Skip(err.Error())
	}
	if _, err := os.Stat(busyboxBin); err != nil {
		t.Skip("needs a static busybox at /bin/busybox: apt-get install -y busybox-static")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	rt, err := containerd.Start(ctx, containerd.Options{DataDir: dir + "/containerd"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		rt.RemoveAllPods(cctx)
		rt.Stop()
	})
	img, err := image.FromBinary(busyboxBin, "/bin/busybox", "/bin/sh", "/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := image.Load(ctx, rt.Socket(), img, "busybox:test"); err != nil {
		t.Fatal(err)
	}
	manifests := filepath.Join(dir, "manifests")
	os.MkdirAll(manifests, 0o755)
	os.WriteFile(filepath.Join(manifests, "web.yaml"), []byte(`apiVersion: v1
kind: Pod
metadata: {name: web, namespace: kube-system}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:test
    command: ["sh", "-c", "sleep 3600"]
`), 0o644)
	// Nothing listens on port 1.
	agent, err := kubelet.New(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, kubelet.Options{
		NodeName: "node-1", DataDir: dir, Runtime: rt, ManifestsDir: manifests,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- agent.Run(ctx) }()
	running := func() bool {
		cs, err := rt.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{"io.kubernetes.pod.name": "web-node-1", "io.kubernetes.pod.namespace": "kube-system"}})
		return err == nil && len(cs) == 1
	}
	waitFor(t, 30*time.Second, "the static pod's container", func(context.Context) (bool, error) { return running(), nil })

	// Removing the manifest stops it, still without the API server.
	os.Remove(filepath.Join(manifests, "web.yaml"))
	waitFor(t, 30*time.Second, "the static pod to stop", func(context.Context) (bool, error) { return !running(), nil })
	cancel()
	select {
	case err := <-done:
		if err != nil && err != context.Canceled {
			t.Errorf("agent: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("agent did not stop")
	}
}
