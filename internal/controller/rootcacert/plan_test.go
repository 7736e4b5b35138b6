package rootcacert

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const testCA = "-----BEGIN CERTIFICATE-----\nTUlJQ...\n-----END CERTIFICATE-----\n"

func TestDesired(t *testing.T) {
	good := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: ConfigMapName, ResourceVersion: "3",
			Labels: map[string]string{"keep": "me"}, Annotations: map[string]string{DescriptionAnnotation: Description, "other": "x"}},
		Data: map[string]string{DataKey: testCA},
	}
	tests := []struct {
		name    string
		current *corev1.ConfigMap
		write   bool
	}{
		{"missing", nil, true},
		{"right", good, false},
		{"edited data", func() *corev1.ConfigMap { c := good.DeepCopy(); c.Data[DataKey] = "junk"; return c }(), true},
		{"extra key", func() *corev1.ConfigMap { c := good.DeepCopy(); c.Data["x"] = "y"; return c }(), true},
		{"binary data", func() *corev1.ConfigMap { c := good.DeepCopy(); c.BinaryData = map[string][]byte{"b": {1}}; return c }(), true},
		{"description removed", func() *corev1.ConfigMap { c := good.DeepCopy(); delete(c.Annotations, DescriptionAnnotation); return c }(), true},
	}
	for _, tt := range tests {
		got, write := Desired("ns", tt.current, []byte(testCA))
		if write != tt.write {
			t.Errorf("%s: write %v, want %v", tt.name, write, tt.write)
		}
		if got.Name != ConfigMapName || got.Namespace != "ns" || len(got.Data) != 1 || got.Data[DataKey] != testCA ||
			len(got.BinaryData) != 0 || got.Annotations[DescriptionAnnotation] != Description {
			t.Errorf("%s: %+v", tt.name, got)
		}
		if tt.current != nil && (got.ResourceVersion != "3" || got.Labels["keep"] != "me" || got.Annotations["other"] != "x") {
			t.Errorf("%s: metadata not kept: %+v", tt.name, got.ObjectMeta)
		}
	}
}

func TestPlan(t *testing.T) {
	now := metav1.Now()
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	deleting := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	right, _ := Desired("ns", nil, []byte(testCA))
	tests := []struct {
		name    string
		ns      *corev1.Namespace
		current *corev1.ConfigMap
		write   bool
	}{
		{"active, none yet: create", active, nil, true},
		{"active, right already: nothing", active, right, false},
		{"terminating: nothing", terminating, nil, false},
		{"being deleted: nothing", deleting, nil, false},
	}
	for _, tt := range tests {
		p := plan(State{Namespace: tt.ns, Current: tt.current, CA: []byte(testCA)})
		if (p.Write != nil) != tt.write {
			t.Errorf("%s: write %v, want %v", tt.name, p.Write != nil, tt.write)
		}
	}
}
