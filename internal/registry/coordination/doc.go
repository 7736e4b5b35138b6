// Package coordination supplies the registry.Resource description of
// coordination.k8s.io/v1 leases, the objects behind leader election and
// node heartbeats.
//
// Leases have no defaults and no status; validation follows upstream:
// leaseDurationSeconds positive, leaseTransitions non-negative, a known
// coordinated-leader-election strategy, and preferredHolder only with a
// strategy. All functions are pure.
package coordination

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the coordination.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{leases()}
}
