package nodestatus

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HealthyConditions are the conditions a healthy kubelet reports at now
// (no memory, disk or PID pressure; Ready), keeping the transition times
// of those in have whose status is the same. Times are whole seconds, as
// the API stores them.
func HealthyConditions(have []corev1.NodeCondition, now time.Time) []corev1.NodeCondition {
	t := metav1.NewTime(now.Truncate(time.Second))
	conds := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	for i := range conds {
		c := &conds[i]
		c.LastHeartbeatTime, c.LastTransitionTime = t, t
		for _, h := range have {
			if h.Type == c.Type && h.Status == c.Status && !h.LastTransitionTime.IsZero() {
				c.LastTransitionTime = h.LastTransitionTime
			}
		}
	}
	return conds
}
