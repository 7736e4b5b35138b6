// Package autoscaling supplies the registry.Resource descriptions of
// horizontalpodautoscalers at autoscaling/v2 and autoscaling/v1.
//
// The strategy follows upstream Kubernetes: v2 defaults (minReplicas 1, a
// CPU-utilization metric of 80% when none is given, and a fully populated
// behavior whenever behavior is set), status cleared on create, generation
// tracked, and validation with upstream v1.37's field paths and messages
// for replica bounds (minReplicas 0 allowed: HPAScaleToZero is on), the
// scale target (its apiVersion names a group), metric sources and scaling
// rules.
// The objects are stored once, as v2; autoscaling/v1 serves them converted
// both ways as upstream's conversion does (convert.go): v1's
// targetCPUUtilizationPercentage is a CPU Utilization metric, and what v1
// has no field for (other metrics, current metrics, behavior, conditions)
// travels in the autoscaling.alpha.kubernetes.io/* annotations.
// All functions are pure; the API server's generic handlers drive them.
package autoscaling

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the autoscaling resources.
func Resources() []registry.Resource {
	return []registry.Resource{horizontalPodAutoscalers(), horizontalPodAutoscalersV1()}
}
