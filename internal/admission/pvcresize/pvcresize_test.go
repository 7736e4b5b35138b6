package pvcresize

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/admissiontest"
)

func TestResize(t *testing.T) {
	classes := []runtime.Object{
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path"}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "no"}, AllowVolumeExpansion: ptr.To(false)},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "grows"}, AllowVolumeExpansion: ptr.To(true)},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "grows-too"}, AllowVolumeExpansion: ptr.To(true)},
	}
	claim := func(class, size string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
		if class != "" {
			pvc.Spec.StorageClassName = ptr.To(class)
		}
		return pvc
	}
	const (
		notBound = "Only bound persistent volume claims can be expanded"
		noResize = "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"
	)
	betaGrows := claim("", "2Gi", corev1.ClaimBound)
	betaGrows.Annotations = map[string]string{"volume.beta.kubernetes.io/storage-class": "grows"}
	betaGrowsOld := betaGrows.DeepCopy()
	betaGrowsOld.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("1Gi")
	for _, tt := range []struct {
		name     string
		old, pvc *corev1.PersistentVolumeClaim
		want     string
	}{
		{"same size", claim("local-path", "1Gi", corev1.ClaimBound), claim("local-path", "1Gi", corev1.ClaimBound), ""},
		{"shrinking is not this plugin's", claim("local-path", "2Gi", corev1.ClaimBound), claim("local-path", "1Gi", corev1.ClaimBound), ""},
		{"growing a pending claim", claim("grows", "1Gi", corev1.ClaimPending), claim("grows", "2Gi", corev1.ClaimPending), notBound},
		{"a class without allowVolumeExpansion", claim("local-path", "1Gi", corev1.ClaimBound), claim("local-path", "2Gi", corev1.ClaimBound), noResize},
		{"allowVolumeExpansion false", claim("no", "1Gi", corev1.ClaimBound), claim("no", "2Gi", corev1.ClaimBound), noResize},
		{"no class", claim("", "1Gi", corev1.ClaimBound), claim("", "2Gi", corev1.ClaimBound), noResize},
		{"a class that does not exist", claim("gone", "1Gi", corev1.ClaimBound), claim("gone", "2Gi", corev1.ClaimBound), noResize},
		{"the class changed", claim("grows", "1Gi", corev1.ClaimBound), claim("grows-too", "2Gi", corev1.ClaimBound), noResize},
		{"a class that allows it", claim("grows", "1Gi", corev1.ClaimBound), claim("grows", "2Gi", corev1.ClaimBound), ""},
		{"the beta annotation names the class", betaGrowsOld, betaGrows, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &admission.Attributes{Operation: admission.Update, Name: "data", Namespace: "default",
				Resource: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Object: tt.pvc, OldObject: tt.old}
			err := (admission.Chain{New(admissiontest.Objects{storageClassesGVR: classes})}).Validate(context.Background(), a)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("allowed, want %q", tt.want)
			case tt.want != "":
				want := `persistentvolumeclaims "data" is forbidden: ` + tt.want
				if !apierrors.IsForbidden(err) || err.Error() != want {
					t.Errorf("error %v\nwant %s", err, want)
				}
			}
		})
	}
}
