package pvprotection

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlan(t *testing.T) {
	now := metav1.Now()
	for _, tt := range []struct {
		name       string
		deleting   bool
		phase      corev1.PersistentVolumePhase
		finalizers []string
		want       []string
		changed    bool
	}{
		{"new volume gets it", false, corev1.VolumeAvailable, []string{"other"}, []string{"other", Finalizer}, true},
		{"protected volume", false, corev1.VolumeBound, []string{Finalizer}, []string{Finalizer}, false},
		{"bound volume being deleted keeps it", true, corev1.VolumeBound, []string{Finalizer, "other"}, []string{Finalizer, "other"}, false},
		{"released volume being deleted loses it", true, corev1.VolumeReleased, []string{Finalizer, "other"}, []string{"other"}, true},
		{"available volume being deleted loses it", true, corev1.VolumeAvailable, []string{Finalizer}, []string{}, true},
		{"deleting without it", true, corev1.VolumeAvailable, []string{"other"}, []string{"other"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v", Finalizers: tt.finalizers}, Status: corev1.PersistentVolumeStatus{Phase: tt.phase}}
			if tt.deleting {
				pv.DeletionTimestamp = &now
			}
			got, changed := plan(pv)
			if changed != tt.changed || !slices.Equal(got, tt.want) {
				t.Errorf("plan = %v %v, want %v %v", got, changed, tt.want, tt.changed)
			}
		})
	}
}
