// Package apiregistration supplies the registry.Resource description of
// apiregistration.k8s.io/v1 apiservices: the objects that tell the API
// server which group-versions it serves itself ("Local") and which it
// proxies to another server behind a Service (API aggregation, served by
// internal/aggregator).
//
// Validation follows upstream's kube-aggregator: the name is
// "<version>.<group>", priorities are bounded, a local APIService has no
// CA bundle, a remote one names a Service and a valid port. Status is
// written by the aggregator's availability checks (the Available
// condition).
package apiregistration

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the apiregistration.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{apiServices()}
}
