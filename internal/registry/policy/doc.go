// Package policy supplies the registry.Resource description of policy/v1
// poddisruptionbudgets.
//
// The strategy follows upstream Kubernetes: status cleared on create,
// generation tracked (the disruption controller reports
// status.observedGeneration), and validation with upstream's field paths
// and messages: minAvailable and maxUnavailable exclusive, each a
// non-negative count or a percentage up to 100%, a valid selector, and a
// known unhealthyPodEvictionPolicy. All functions are pure.
package policy

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the policy resources.
func Resources() []registry.Resource {
	return []registry.Resource{podDisruptionBudgets()}
}
