package kubelet_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/kubelet/network"
)

// TestLocalPathFolder: a real agent publishes its local-path folder, a
// claim provisioned on it gets a volume there, and when the claim is
// deleted (reclaim Delete) the agent removes the folder and the volume
// goes.
func TestLocalPathFolder(t *testing.T) {
	cs, dir := startNode(t, network.DefaultPodCIDR)
	ctx := context.Background()
	node, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(dir, "storage")
	if got := node.Annotations[localpath.NodeDirAnnotation]; got != storage {
		t.Fatalf("%s = %q, want %q", localpath.NodeDirAnnotation, got, storage)
	}

	claims := cs.CoreV1().PersistentVolumeClaims("default")
	claim, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Annotations: map[string]string{"volume.kubernetes.io/selected-node": "node-1"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the claim bound", func(ctx context.Context) (bool, error) {
		c, err := claims.Get(ctx, "data", metav1.GetOptions{})
		return err == nil && c.Status.Phase == corev1.ClaimBound, nil
	})
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, "pvc-"+string(claim.UID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(storage, localpath.FolderName(claim))
	if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != folder {
		t.Fatalf("volume's hostPath %+v, want %s", pv.Spec.HostPath, folder)
	}
	// What a pod mounting it would have made.
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "file"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := claims.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the volume gone", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if _, err := os.Stat(folder); !os.IsNotExist(err) {
		t.Errorf("the volume's folder is still there: %v", err)
	}
	if _, err := os.Stat(storage); err != nil {
		t.Errorf("the local-path folder itself: %v", err)
	}
}
