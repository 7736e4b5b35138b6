// Package networking supplies the registry.Resource descriptions of the
// networking.k8s.io/v1 group: ingresses, ingressclasses, networkpolicies,
// servicecidrs and ipaddresses.
//
// The strategies follow upstream Kubernetes: network policy ports default to
// TCP and policyTypes to Ingress (plus Egress when egress rules exist),
// ingress class parameters default to Cluster scope, ingress status is
// cleared on create, generation is tracked, and validation uses upstream's
// field paths and messages (ingress rules, paths and backends, TLS hosts,
// class controller immutability, policy peers, ports and CIDRs, service
// CIDRs immutable but for gaining a second family, IP address names in
// canonical form with an immutable parent reference).
// All functions are pure.
package networking

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the networking.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{ingresses(), ingressClasses(), networkPolicies(), serviceCIDRs(), ipAddresses()}
}
