package controllermanager_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/pkg/testenv"
)

// TestLocalPathStorage runs the controller manager (each controller as its
// own ServiceAccount) over a server with the default admission plugins:
// a claim of the default class local-path waits for the scheduler's node,
// is provisioned and bound, is kept while a pod uses it, and once deleted
// its volume is deleted too (the node gone, its folder with it).
func TestLocalPathStorage(t *testing.T) {
	env := testenv.Start(t, testenv.WithControllers())
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	eventually := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			return cond(), nil
		}); err != nil {
			t.Fatalf("waiting for %s", what)
		}
	}
	class, err := cs.StorageV1().StorageClasses().Get(ctx, localpath.StorageClassName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the default StorageClass: %v", err)
	}
	if class.Annotations[localpath.DefaultClassAnnotation] != "true" || class.Provisioner != localpath.Provisioner ||
		*class.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || string(*class.VolumeBindingMode) != "WaitForFirstConsumer" {
		t.Errorf("default class %+v", class)
	}
	dir := t.TempDir()
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels: map[string]string{corev1.LabelHostname: "n1"}, Annotations: map[string]string{localpath.NodeDirAnnotation: dir}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	claims := cs.CoreV1().PersistentVolumeClaims("default")
	claim, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != localpath.StorageClassName || !slices.Contains(claim.Finalizers, "kubernetes.io/pvc-protection") {
		t.Errorf("new claim: class %v finalizers %v", claim.Spec.StorageClassName, claim.Finalizers)
	}
	hasEvent := func(reason string) bool {
		l, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=data,reason=" + reason})
		return err == nil && len(l.Items) > 0
	}
	eventually("WaitForFirstConsumer", func() bool { return hasEvent("WaitForFirstConsumer") })

	// The scheduler's part: the node it picked.
	claim, _ = claims.Get(ctx, "data", metav1.GetOptions{})
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, "volume.kubernetes.io/selected-node", "n1")
	if _, err := claims.Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the claim bound", func() bool {
		c, err := claims.Get(ctx, "data", metav1.GetOptions{})
		return err == nil && c.Status.Phase == corev1.ClaimBound
	})
	pvName := "pvc-" + string(claim.UID)
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Status.Phase != corev1.VolumeBound && pv.Status.Phase != corev1.VolumeAvailable {
		t.Errorf("volume phase %s", pv.Status.Phase)
	}
	if pv.Spec.HostPath.Path != dir+"/pvc-"+string(claim.UID)+"_default_data" ||
		!slices.Contains(pv.Finalizers, "kubernetes.io/pv-protection") || !slices.Contains(pv.Finalizers, localpath.CleanupFinalizer) {
		t.Errorf("volume %s at %s, finalizers %v", pv.Name, pv.Spec.HostPath.Path, pv.Finalizers)
	}
	if !hasEvent("ProvisioningSucceeded") || !hasEvent("ExternalProvisioning") {
		t.Error("no ExternalProvisioning and ProvisioningSucceeded events")
	}

	// In use, the claim stays.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user"}, Spec: corev1.PodSpec{NodeName: "n1",
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes:    []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := claims.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := claims.Get(ctx, "data", metav1.GetOptions{}); err != nil {
		t.Fatalf("a claim in use went: %v", err)
	}
	zero := int64(0)
	if err := cs.CoreV1().Pods("default").Delete(ctx, "user", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	eventually("the claim gone", func() bool {
		_, err := claims.Get(ctx, "data", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	// Reclaim Delete: the volume is deleted and waits for its node's cleanup.
	eventually("the volume being deleted", func() bool {
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
		return err == nil && pv.DeletionTimestamp != nil && slices.Equal(pv.Finalizers, []string{localpath.CleanupFinalizer})
	})
	if err := cs.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the volume gone", func() bool {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
