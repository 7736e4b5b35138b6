package storageobjectinuseprotection

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"plainkube.dev/plainkube/internal/admission"
)

func TestFinalizers(t *testing.T) {
	pvcs, pvs := corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), corev1.SchemeGroupVersion.WithResource("persistentvolumes")
	meta := func(f ...string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: "x", Finalizers: f} }
	for _, tt := range []struct {
		name string
		op   admission.Operation
		obj  runtime.Object
		want []string
	}{
		{"new claim", admission.Create, &corev1.PersistentVolumeClaim{ObjectMeta: meta()}, []string{PVCProtectionFinalizer}},
		{"new claim with a finalizer", admission.Create, &corev1.PersistentVolumeClaim{ObjectMeta: meta("a/b")}, []string{"a/b", PVCProtectionFinalizer}},
		{"protected claim", admission.Create, &corev1.PersistentVolumeClaim{ObjectMeta: meta(PVCProtectionFinalizer)}, []string{PVCProtectionFinalizer}},
		{"new volume", admission.Create, &corev1.PersistentVolume{ObjectMeta: meta()}, []string{PVProtectionFinalizer}},
		{"claim update", admission.Update, &corev1.PersistentVolumeClaim{ObjectMeta: meta()}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := pvcs
			if _, ok := tt.obj.(*corev1.PersistentVolume); ok {
				res = pvs
			}
			a := &admission.Attributes{Operation: tt.op, Resource: res, Object: tt.obj}
			if err := (admission.Chain{New()}).Mutate(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if got := tt.obj.(metav1.Object).GetFinalizers(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("finalizers %v, want %v", got, tt.want)
			}
		})
	}
}
