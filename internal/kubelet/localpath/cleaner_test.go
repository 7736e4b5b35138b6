package localpath

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/controller/controllertest"
)

// TestCleaner runs the cleaner as node n1 against a real API server: the
// Node authorizer and NodeRestriction decide what it may do.
func TestCleaner(t *testing.T) {
	ctx := context.Background()
	s := controllertest.NewServer(t)
	admin, err := kubernetes.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	nodeClient, err := kubernetes.NewForConfig(s.ConfigAs(auth.NodeUser("n1")))
	if err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "storage")
	outside := filepath.Join(t.TempDir(), "pvc-victim")
	mine := filepath.Join(dir, "pvc-1_default_data")
	for _, d := range []string{mine, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "file"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	volume := func(name, node, path string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{localpath.NodeLabel: node},
				Annotations: map[string]string{localpath.ProvisionedByAnnotation: localpath.Provisioner},
				Finalizers:  []string{localpath.CleanupFinalizer, "example.com/keep"}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}},
			},
		}
	}
	for _, pv := range []*corev1.PersistentVolume{
		volume("pvc-1", "n1", mine),
		volume("pvc-outside", "n1", outside),
		volume("pvc-theirs", "n2", filepath.Join(dir, "pvc-theirs")),
	} {
		if _, err := admin.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// A node lists only its own local-path volumes.
	if _, err := nodeClient.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a node lists all volumes: %v", err)
	}
	if _, err := nodeClient.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: localpath.NodeLabel + "=n2"}); !apierrors.IsForbidden(err) {
		t.Errorf("a node lists another node's volumes: %v", err)
	}
	// Once the authorizer's graph has seen its volume, the node may get it,
	// but not change it beyond the cleanup finalizer (NodeRestriction).
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := nodeClient.CoreV1().PersistentVolumes().Get(ctx, "pvc-1", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatal("the node cannot get its own local-path volume")
	}
	pv, err := nodeClient.CoreV1().PersistentVolumes().Get(ctx, "pvc-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Spec.HostPath.Path = "/etc"
	pv.Finalizers = nil
	if _, err := nodeClient.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "may only remove the plainkube.dev/local-path-cleanup finalizer") {
		t.Fatalf("changing a volume's path: %v", err)
	}
	theirs, _ := admin.CoreV1().PersistentVolumes().Get(ctx, "pvc-theirs", metav1.GetOptions{})
	theirs.Finalizers = []string{"example.com/keep"}
	if _, err := nodeClient.CoreV1().PersistentVolumes().Update(ctx, theirs, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a node updates another node's volume: %v", err)
	}

	c := &Cleaner{Client: nodeClient, Node: "n1", Dir: dir, Log: controllertest.Logger(t)}
	done := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	go func() { done <- c.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	for _, name := range []string{"pvc-1", "pvc-outside", "pvc-theirs"} {
		if err := admin.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	finalizers := func(name string) []string {
		pv, err := admin.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pv.Finalizers
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(finalizers("pvc-1")) == 1 && len(finalizers("pvc-outside")) == 1, nil
	}); err != nil {
		t.Fatalf("cleanup finalizers left: %v %v", finalizers("pvc-1"), finalizers("pvc-outside"))
	}
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Errorf("the volume's folder is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "file")); err != nil {
		t.Errorf("a folder outside the node's local-path folder was touched: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if f := finalizers("pvc-theirs"); len(f) != 2 {
		t.Errorf("another node's volume lost its finalizer: %v", f)
	}
}
