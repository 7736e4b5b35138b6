package serviceaccount

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlan(t *testing.T) {
	active := &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	terminating := &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	now := metav1.Now()
	deleting := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	has := func(names ...string) []string { return names }
	tests := []struct {
		name string
		ns   *corev1.Namespace
		want []string
		has  []string
		out  []string
	}{
		{"new namespace", active, []string{"default"}, has(), []string{"default"}},
		{"already there", active, []string{"default"}, has("default"), nil},
		{"several names", active, []string{"default", "builder", "default"}, has("builder"), []string{"default"}},
		{"terminating namespace", terminating, []string{"default"}, has(), nil},
		{"namespace being deleted", deleting, []string{"default"}, has(), nil},
		{"no namespace", nil, []string{"default"}, has(), nil},
	}
	for _, tt := range tests {
		if got := plan(State{Namespace: tt.ns, Want: tt.want, Have: tt.has}).Create; !slices.Equal(got, tt.out) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.out)
		}
	}
}
