package core

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestLeaseHealth: a component is healthy while someone holds its Lease
// and renews it within the Lease's duration.
func TestLeaseHealth(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lease := func(holder string, renewedAgo time.Duration) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-scheduler"},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(int32(15)), RenewTime: &metav1.MicroTime{Time: now.Add(-renewedAgo)}}}
		if holder != "" {
			l.Spec.HolderIdentity = &holder
		}
		return l
	}
	tests := []struct {
		name       string
		lease      *coordinationv1.Lease
		want       corev1.ConditionStatus
		msg, error string
	}{
		{"renewed", lease("a", 2*time.Second), corev1.ConditionTrue, "ok", ""},
		{"expired", lease("a", 20*time.Second), corev1.ConditionFalse, "",
			"leader a last renewed Lease kube-system/kube-scheduler at 2026-01-02T03:03:45Z, longer ago than its duration of 15s"},
		{"released", lease("", time.Second), corev1.ConditionFalse, "", "no leader: Lease kube-system/kube-scheduler has no holder"},
	}
	for _, tc := range tests {
		status, msg, err := leaseHealth(tc.lease, now)
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		if status != tc.want || msg != tc.msg || errText != tc.error {
			t.Errorf("%s: %s %q %q, want %s %q %q", tc.name, status, msg, errText, tc.want, tc.msg, tc.error)
		}
	}
}
