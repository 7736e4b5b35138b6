// Package node supplies the registry.Resource description of
// node.k8s.io/v1 runtimeclasses.
//
// Validation follows upstream: a handler that is a DNS label and never
// changes, an overhead of valid, non-negative resource quantities, and a
// scheduling nodeSelector of valid labels with valid, distinct
// tolerations. What a RuntimeClass does to the pods naming it (their
// overhead, node selector and tolerations) is the RuntimeClass admission
// plugin's (internal/admission/runtimeclass).
package node

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the node.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{runtimeClasses()}
}
