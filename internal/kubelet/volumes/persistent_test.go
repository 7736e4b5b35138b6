package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClaimedVolume(t *testing.T) {
	bound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u1"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	pending := bound.DeepCopy()
	pending.Status.Phase = corev1.ClaimPending
	deleting := bound.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "c", UID: "u1"}}}
	other := pv.DeepCopy()
	other.Spec.ClaimRef.UID = "u2"
	unref := pv.DeepCopy()
	unref.Spec.ClaimRef = nil
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}
	vol := &corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}
	for _, tc := range []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		pv    *corev1.PersistentVolume
		want  string
	}{
		{"bound", bound, pv, ""},
		{"missing claim", nil, pv, `error processing PVC ns/c: failed to fetch PVC from API server: persistentvolumeclaims "c" not found`},
		{"not bound", pending, pv, "error processing PVC ns/c: PVC is not bound"},
		{"being deleted", deleting, pv, "error processing PVC ns/c: PVC is being deleted"},
		{"missing volume", bound, nil, `error processing PVC ns/c: failed to fetch PV pv from API server: persistentvolumes "pv" not found`},
		{"volume of another claim", bound, other, "error processing PVC ns/c: found PV object pv but its ClaimRef UID u2 does not point to PVC ns/c (UID: u1)"},
		{"volume without claimRef", bound, unref, "error processing PVC ns/c: found PV object pv but it has a nil or empty ClaimRef"},
	} {
		objs := volumeObjects{
			Claim: func(name string) (*corev1.PersistentVolumeClaim, error) {
				if tc.claim == nil {
					return nil, apierrors.NewNotFound(corev1.Resource("persistentvolumeclaims"), name)
				}
				return tc.claim, nil
			},
			Volume: func(name string) (*corev1.PersistentVolume, error) {
				if tc.pv == nil {
					return nil, apierrors.NewNotFound(corev1.Resource("persistentvolumes"), name)
				}
				return tc.pv, nil
			},
		}
		_, got, err := claimedVolume(pod, vol, objs)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != tc.want || (err == nil && got != tc.pv) {
			t.Errorf("%s: %q, want %q", tc.name, msg, tc.want)
		}
	}
}

func TestSetupPersistentVolume(t *testing.T) {
	dir := t.TempDir()
	pod := &corev1.Pod{}
	claim := &corev1.PersistentVolumeClaim{}
	create := corev1.HostPathDirectoryOrCreate
	hostPV := func(path string, ann map[string]string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Annotations: ann},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &create}}}}
	}
	// A local-path folder is made world-writable; another hostPath gets
	// upstream's 0755.
	lp := filepath.Join(dir, "storage", "pvc-1")
	if got, err := setupPersistentVolume(pod, claim, hostPV(lp, map[string]string{annProvisionedBy: localPathProvisioner}), false); err != nil || got != lp {
		t.Fatalf("local-path: %q %v", got, err)
	}
	plain := filepath.Join(dir, "plain")
	if _, err := setupPersistentVolume(pod, claim, hostPV(plain, nil), false); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{lp: 0o777, plain: 0o755} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %o", path, fi.Mode(), err, want)
		}
	}
	// A local volume must exist.
	local := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "disk"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: filepath.Join(dir, "nope")}}}}
	if _, err := setupPersistentVolume(pod, claim, local, false); err == nil || !strings.Contains(err.Error(), "local volume disk") {
		t.Errorf("missing local path: %v", err)
	}
	// Block is refused; other sources are not mounted.
	block := corev1.PersistentVolumeBlock
	blockClaim := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: &block}}
	if _, err := setupPersistentVolume(pod, blockClaim, hostPV(plain, nil), false); err != errBlockVolume {
		t.Errorf("block: %v", err)
	}
	nfs := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "share"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "x", Path: "/"}}}}
	if _, err := setupPersistentVolume(pod, claim, nfs, false); err == nil || !strings.Contains(err.Error(), "hostPath and local volumes only") {
		t.Errorf("nfs: %v", err)
	}
}
