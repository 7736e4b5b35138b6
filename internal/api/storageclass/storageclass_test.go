package storageclass

import (
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefault(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sc := func(name string, created time.Time, annotations map[string]string) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created), Annotations: annotations}}
	}
	isDefault := map[string]string{IsDefaultAnnotation: "true"}
	for _, tt := range []struct {
		name    string
		classes []*storagev1.StorageClass
		want    string
	}{
		{"no classes", nil, ""},
		{"no default", []*storagev1.StorageClass{sc("a", at, nil), sc("b", at, map[string]string{IsDefaultAnnotation: "false"})}, ""},
		{"the default", []*storagev1.StorageClass{sc("a", at, nil), sc("fast", at, isDefault)}, "fast"},
		{"the beta annotation", []*storagev1.StorageClass{sc("old", at, map[string]string{BetaIsDefaultAnnotation: "true"})}, "old"},
		{"two defaults: the newest", []*storagev1.StorageClass{sc("newer", at.Add(time.Hour), isDefault), sc("older", at, isDefault)}, "newer"},
		{"two defaults, the newest last", []*storagev1.StorageClass{sc("older", at, isDefault), sc("newer", at.Add(time.Hour), isDefault)}, "newer"},
		{"two defaults at once: by name", []*storagev1.StorageClass{sc("zeta", at, isDefault), sc("alpha", at, isDefault)}, "alpha"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if d := Default(tt.classes); d != nil {
				got = d.Name
			}
			if got != tt.want {
				t.Errorf("Default = %q, want %q", got, tt.want)
			}
		})
	}
}
