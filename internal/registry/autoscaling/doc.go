// Package autoscaling supplies the registry.Resource description of
// autoscaling/v2 horizontalpodautoscalers.
//
// The strategy follows upstream Kubernetes: v2 defaults (minReplicas 1, a
// CPU-utilization metric of 80% when none is given, and a fully populated
// behavior whenever behavior is set), status cleared on create, generation
// tracked, and validation with upstream's field paths and messages for
// replica bounds, the scale target, metric sources and scaling rules.
// All functions are pure; the API server's generic handlers drive them.
package autoscaling

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the autoscaling resources.
func Resources() []registry.Resource {
	return []registry.Resource{horizontalPodAutoscalers()}
}
