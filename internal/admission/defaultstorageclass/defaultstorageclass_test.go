package defaultstorageclass

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/admissiontest"
	"plainkube.dev/plainkube/internal/api/storageclass"
)

func TestDefaultClass(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sc := func(name string, created time.Time, annotations map[string]string) runtime.Object {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created), Annotations: annotations}}
	}
	isDefault := map[string]string{storageclass.IsDefaultAnnotation: "true"}
	for _, tt := range []struct {
		name    string
		classes []runtime.Object
		pvc     corev1.PersistentVolumeClaim
		want    *string
	}{
		{"no classes", nil, corev1.PersistentVolumeClaim{}, nil},
		{"no default", []runtime.Object{sc("a", at, nil), sc("b", at, map[string]string{storageclass.IsDefaultAnnotation: "false"})}, corev1.PersistentVolumeClaim{}, nil},
		{"the default", []runtime.Object{sc("a", at, nil), sc("fast", at, isDefault)}, corev1.PersistentVolumeClaim{}, ptr.To("fast")},
		{"the beta annotation", []runtime.Object{sc("old", at, map[string]string{storageclass.BetaIsDefaultAnnotation: "true"})}, corev1.PersistentVolumeClaim{}, ptr.To("old")},
		{"two defaults: the newest", []runtime.Object{sc("older", at, isDefault), sc("newer", at.Add(time.Hour), isDefault)}, corev1.PersistentVolumeClaim{}, ptr.To("newer")},
		{"two defaults at once: by name", []runtime.Object{sc("zeta", at, isDefault), sc("alpha", at, isDefault)}, corev1.PersistentVolumeClaim{}, ptr.To("alpha")},
		{"a class asked for", []runtime.Object{sc("fast", at, isDefault)}, corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("slow")}}, ptr.To("slow")},
		{"no class asked for", []runtime.Object{sc("fast", at, isDefault)}, corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("")}}, ptr.To("")},
		{"the beta class annotation", []runtime.Object{sc("fast", at, isDefault)}, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{BetaClassAnnotation: "x"}}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objects := admissiontest.Objects{storageClassesGVR: tt.classes}
			pvc := tt.pvc.DeepCopy()
			a := &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Object: pvc}
			if err := (admission.Chain{New(objects)}).Mutate(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			got := pvc.Spec.StorageClassName
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("storageClassName %v, want %v", ptr.Deref(got, "<nil>"), ptr.Deref(tt.want, "<nil>"))
			}
		})
	}
}
