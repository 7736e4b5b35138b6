package persistentvolume

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/storage/volume"

	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/controller/controllertest"
)

func TestBinder(t *testing.T) {
	cfg := controllertest.StartServer(t)
	cs := controllertest.Clientset(t, cfg)
	ctx := context.Background()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	c.Resync = time.Second
	controllertest.Run(t, c, 2)

	mkPV := func(name, size string, opts ...func(*corev1.PersistentVolume)) {
		t.Helper()
		v := pv(name, size, opts...)
		v.Status = corev1.PersistentVolumeStatus{}
		v.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/tmp/" + name}
		if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, v, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mkPVC := func(name, size string, opts ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		t.Helper()
		cl := pvc(name, size, opts...)
		cl.Namespace, cl.UID, cl.Status = "default", "", corev1.PersistentVolumeClaimStatus{}
		created, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, cl, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	mkPV("small", "1Gi")
	mkPV("big", "10Gi")
	mkPV("wanted", "5Gi")
	// Matching skips volumes not yet Available (as upstream's
	// FindMatchingVolume): a claim made before the controller has marked
	// "small" Available would get "big".
	for _, name := range []string{"small", "big", "wanted"} {
		waitVolume(t, cs, name, corev1.VolumeAvailable)
	}

	// The smallest volume that fits is bound, both ways.
	mkPVC("data", "500Mi")
	waitClaim(t, cs, "data", corev1.ClaimBound)
	claim, _ := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	if claim.Spec.VolumeName != "small" || claim.Annotations[volume.AnnBindCompleted] != "yes" || claim.Annotations[volume.AnnBoundByController] != "yes" {
		t.Fatalf("claim bound to %q, annotations %v", claim.Spec.VolumeName, claim.Annotations)
	}
	if q := claim.Status.Capacity[corev1.ResourceStorage]; q.String() != "1Gi" || len(claim.Status.AccessModes) != 1 {
		t.Errorf("claim status %+v", claim.Status)
	}
	waitVolume(t, cs, "small", corev1.VolumeBound)
	vol, _ := cs.CoreV1().PersistentVolumes().Get(ctx, "small", metav1.GetOptions{})
	if vol.Spec.ClaimRef == nil || vol.Spec.ClaimRef.UID != claim.UID || vol.Annotations[volume.AnnBoundByController] != "yes" {
		t.Errorf("volume claimRef %+v annotations %v", vol.Spec.ClaimRef, vol.Annotations)
	}

	// A claim naming its volume gets it, though a smaller one fits.
	mkPVC("named", "1Gi", volumeName("wanted"))
	waitClaim(t, cs, "named", corev1.ClaimBound)
	if v, _ := cs.CoreV1().PersistentVolumes().Get(ctx, "wanted", metav1.GetOptions{}); v.Spec.ClaimRef == nil || v.Spec.ClaimRef.Name != "named" {
		t.Errorf("wanted volume's claimRef %+v", v.Spec.ClaimRef)
	}

	// Nothing fits: Pending, with upstream's event.
	mkPVC("huge", "1Ti")
	waitEvent(t, cs, "huge", "FailedBinding")
	if cl, _ := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "huge", metav1.GetOptions{}); cl.Status.Phase != corev1.ClaimPending {
		t.Errorf("claim huge is %s", cl.Status.Phase)
	}
	// A volume made later is found on the next resync.
	mkPV("later", "2Ti")
	waitClaim(t, cs, "huge", corev1.ClaimBound)

	// Reclaim Retain: the claim deleted, its volume is Released and stays.
	if err := cs.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitVolume(t, cs, "small", corev1.VolumeReleased)

	// A claim made while there is no default class stays without one.
	mkPVC("classless", "50Ti")
	waitEvent(t, cs, "classless", "FailedBinding")

	// A class whose provisioner binds on first consumer: the claim waits
	// for the scheduler, then is handed to the provisioner.
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, localpath.StorageClass(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// It is the default: the classless claim gets it (upstream's
	// RetroactiveDefaultStorageClass) and waits for its first consumer.
	controllertest.Eventually(t, "the default class assigned", func() (bool, error) {
		cl, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "classless", metav1.GetOptions{})
		return err == nil && cl.Spec.StorageClassName != nil && *cl.Spec.StorageClassName == localpath.StorageClassName, err
	})
	waitEvent(t, cs, "classless", "WaitForFirstConsumer")
	local := mkPVC("local", "1Gi", class(localpath.StorageClassName))
	waitEvent(t, cs, "local", "WaitForFirstConsumer")
	local, _ = cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "local", metav1.GetOptions{})
	metav1.SetMetaDataAnnotation(&local.ObjectMeta, volume.AnnSelectedNode, "n1")
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Update(ctx, local, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, cs, "local", "ExternalProvisioning")
	controllertest.Eventually(t, "the provisioner annotation", func() (bool, error) {
		cl, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "local", metav1.GetOptions{})
		return err == nil && cl.Annotations[volume.AnnStorageProvisioner] == localpath.Provisioner && cl.Annotations[volume.AnnBetaStorageProvisioner] == localpath.Provisioner, err
	})
	// What the provisioner makes (a volume pre-bound to the claim) is bound.
	mkPV("pvc-"+string(local.UID), "1Gi", pvClass(localpath.StorageClassName), claimRef("default", "local", local.UID),
		pvAnn(volume.AnnDynamicallyProvisioned, localpath.Provisioner), reclaimPolicy(corev1.PersistentVolumeReclaimDelete))
	waitClaim(t, cs, "local", corev1.ClaimBound)

	// Reclaim Delete of the provisioner's volume: the binder deletes it.
	if err := cs.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "local", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "the released volume deleted", func() (bool, error) {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, "pvc-"+string(local.UID), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// Reclaim Delete of a volume no deleter serves: Failed.
	mkPV("nodeleter", "3Ti", reclaimPolicy(corev1.PersistentVolumeReclaimDelete))
	mkPVC("doomed", "3Ti", volumeName("nodeleter"), class("")) // not the default class, there is one now
	waitClaim(t, cs, "doomed", corev1.ClaimBound)
	if err := cs.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitVolume(t, cs, "nodeleter", corev1.VolumeFailed)

	// A bound claim whose volume is deleted is Lost.
	if err := cs.CoreV1().PersistentVolumes().Delete(ctx, "wanted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClaim(t, cs, "named", corev1.ClaimLost)
	waitEvent(t, cs, "named", "ClaimLost")
}

func waitClaim(t *testing.T, cs kubernetes.Interface, name string, phase corev1.PersistentVolumeClaimPhase) {
	t.Helper()
	controllertest.Eventually(t, "claim "+name+" "+string(phase), func() (bool, error) {
		c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && c.Status.Phase == phase, err
	})
}

func waitVolume(t *testing.T, cs kubernetes.Interface, name string, phase corev1.PersistentVolumePhase) {
	t.Helper()
	controllertest.Eventually(t, "volume "+name+" "+string(phase), func() (bool, error) {
		v, err := cs.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && v.Status.Phase == phase, err
	})
}

func waitEvent(t *testing.T, cs kubernetes.Interface, claim, reason string) {
	t.Helper()
	controllertest.Eventually(t, "event "+reason+" on claim "+claim, func() (bool, error) {
		l, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": claim, "reason": reason}.String()})
		return err == nil && len(l.Items) > 0, err
	})
}
