package localpath

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/controller/controllertest"
)

func TestProvisioner(t *testing.T) {
	cfg := controllertest.StartServer(t)
	cs := controllertest.Clientset(t, cfg)
	ctx := context.Background()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)

	if _, err := cs.StorageV1().StorageClasses().Create(ctx, localpath.StorageClass(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1"}, Annotations: map[string]string{localpath.NodeDirAnnotation: dir}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "sim-1", Labels: map[string]string{corev1.LabelHostname: "sim-1"}}},
	} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	class := localpath.StorageClassName
	mkClaim := func(name, node string) *corev1.PersistentVolumeClaim {
		t.Helper()
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
				annStorageProvisioner: localpath.Provisioner, annSelectedNode: node}},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class,
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}
		created, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	waitVolume := func(claim *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
		t.Helper()
		var pv *corev1.PersistentVolume
		controllertest.Eventually(t, "the volume of "+claim.Name, func() (bool, error) {
			var err error
			pv, err = cs.CoreV1().PersistentVolumes().Get(ctx, "pvc-"+string(claim.UID), metav1.GetOptions{})
			return err == nil, err
		})
		return pv
	}

	real := mkClaim("data", "n1")
	pv := waitVolume(real)
	if want := dir + "/pvc-" + string(real.UID) + "_default_data"; pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != want {
		t.Errorf("hostPath %+v, want %s", pv.Spec.HostPath, want)
	}
	if pv.Labels[localpath.NodeLabel] != "n1" || len(pv.Finalizers) != 1 || pv.Spec.ClaimRef.UID != real.UID {
		t.Errorf("volume %+v", pv.ObjectMeta)
	}
	sim := mkClaim("simulated", "sim-1")
	if pv := waitVolume(sim); pv.Labels != nil || pv.Finalizers != nil {
		t.Errorf("a simulated node's volume has a cleanup: %+v", pv.ObjectMeta)
	}

	// A claim on a node that does not exist gets an event and goes back to
	// the scheduler: its selected-node annotation is removed.
	mkClaim("nowhere", "gone")
	controllertest.Eventually(t, "ProvisioningFailed", func() (bool, error) {
		l, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=nowhere,reason=ProvisioningFailed"})
		return err == nil && len(l.Items) > 0 && l.Items[0].Message == `node "gone" not found`, err
	})
	controllertest.Eventually(t, "the selected node removed", func() (bool, error) {
		cl, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "nowhere", metav1.GetOptions{})
		_, selected := cl.Annotations[annSelectedNode]
		return err == nil && !selected && cl.Annotations[annStorageProvisioner] == localpath.Provisioner, err
	})

	// The volume deleted, its folder waits for its node; the node gone,
	// nothing waits.
	if err := cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("volume being deleted: %v %v", got, err)
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "the volume of a deleted node released", func() (bool, error) {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
