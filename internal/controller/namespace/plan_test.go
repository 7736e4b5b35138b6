package namespace

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlan(t *testing.T) {
	deleting := &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	ns := func(del *metav1.Time, phase corev1.NamespacePhase, finalizers ...corev1.FinalizerName) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", DeletionTimestamp: del},
			Spec: corev1.NamespaceSpec{Finalizers: finalizers}, Status: corev1.NamespaceStatus{Phase: phase}}
	}
	tests := []struct {
		name string
		ns   *corev1.Namespace
		want Plan
	}{
		{"not being deleted", ns(nil, corev1.NamespaceActive, corev1.FinalizerKubernetes), Plan{Skip: true}},
		{"just deleted: mark Terminating, then empty it", ns(deleting, corev1.NamespaceActive, corev1.FinalizerKubernetes),
			Plan{MarkTerminating: true}},
		{"terminating: empty it", ns(deleting, corev1.NamespaceTerminating, corev1.FinalizerKubernetes), Plan{}},
		{"finalized already: nothing", ns(deleting, corev1.NamespaceTerminating), Plan{Finalized: true}},
	}
	for _, tt := range tests {
		if got := plan(State{Namespace: tt.ns}); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestContentWait(t *testing.T) {
	for estimate, want := range map[int64]time.Duration{0: time.Second, 1: time.Second, 15: 8 * time.Second, 30: 16 * time.Second} {
		if got := contentWait(estimate); got != want {
			t.Errorf("contentWait(%d) = %v, want %v", estimate, got, want)
		}
	}
}
