// Package core supplies the registry.Resource descriptions of the core/v1
// group (the legacy /api/v1 endpoints): namespaces, pods, services,
// endpoints, configmaps, secrets, serviceaccounts, nodes, events,
// limitranges, resourcequotas, persistentvolumes, persistentvolumeclaims,
// replicationcontrollers and podtemplates; and componentstatuses, which
// are not stored: each read looks at the components the API server was
// given (the scheduler and controller manager through their leader
// Leases, LeaseProbe; the etcd members), as upstream answers them.
//
// Each resource's Strategy follows upstream Kubernetes v1.37: the v1
// defaults, the fields the server owns on create and update, name rules,
// validation with upstream's field paths and messages, and field selectors.
// Pod specs and pod templates are defaulted and validated by package
// podspec.
//
// The API server's generic handlers drive these functions: Default on every
// decoded body, PrepareForCreate/PrepareForUpdate before validation, then
// Validate (on create and on every main-resource update) and ValidateUpdate
// or ValidateStatusUpdate. Everything here is pure: no I/O, no clock except
// where upstream stamps a time (a PV's lastPhaseTransitionTime), and except
// the componentstatuses handler, which probes.
package core

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the core/v1 resources.
func Resources() []registry.Resource {
	return []registry.Resource{
		namespaces(),
		pods(),
		services(),
		endpoints(),
		configMaps(),
		secrets(),
		serviceAccounts(),
		nodes(),
		events(),
		limitRanges(),
		resourceQuotas(),
		persistentVolumes(),
		persistentVolumeClaims(),
		replicationControllers(),
		podTemplates(),
		componentStatuses(),
		bindings(),
	}
}
