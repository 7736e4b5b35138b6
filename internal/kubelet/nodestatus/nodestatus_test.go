package nodestatus

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHealthyConditionsKeepTransitions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first := HealthyConditions(nil, t0)
	later := HealthyConditions(first, t0.Add(time.Minute))
	for _, c := range later {
		if !c.LastTransitionTime.Time.Equal(t0) || !c.LastHeartbeatTime.Time.Equal(t0.Add(time.Minute)) {
			t.Errorf("%s: transition %v heartbeat %v", c.Type, c.LastTransitionTime, c.LastHeartbeatTime)
		}
	}
	unknown := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: metav1.NewTime(t0)}}
	back := HealthyConditions(unknown, t0.Add(time.Hour))
	if r := back[3]; r.Type != corev1.NodeReady || r.Status != corev1.ConditionTrue || !r.LastTransitionTime.Time.Equal(t0.Add(time.Hour)) {
		t.Errorf("Ready after Unknown: %+v", r)
	}
}
