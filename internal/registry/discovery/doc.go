// Package discovery supplies the registry.Resource description of
// discovery.k8s.io/v1 endpointslices.
//
// The strategy follows upstream Kubernetes: ports default to protocol TCP
// and name "", generation starts at 1 and goes up with any change to the
// endpoints, ports, address type or labels, the deprecated topology field is
// cleared when endpoints are written through v1, and validation uses
// upstream's field paths and messages (addressType IPv4/IPv6/FQDN and
// immutable, 1–100 addresses per endpoint of that type, at most 1000
// endpoints and 100 uniquely named ports). All functions are pure.
package discovery

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the discovery.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{endpointSlices()}
}
