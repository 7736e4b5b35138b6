// Package apps supplies the registry.Resource descriptions of the apps/v1
// group: deployments, replicasets, statefulsets, daemonsets and
// controllerrevisions.
//
// Each resource's Strategy follows upstream Kubernetes: the v1 defaults
// (replicas 1, RollingUpdate strategies, revision history 10, …), the
// status reset on create, and validation with upstream's field paths and
// messages — selector required, matching the pod template's labels and
// immutable after create, restartPolicy Always, rolling-update bounds.
// Pod templates are defaulted and validated by package podspec.
//
// The API server's generic handlers drive these functions: Default on every
// decoded body, PrepareForCreate/PrepareForUpdate before validation, then
// Validate (on create and update) and ValidateUpdate or ValidateStatusUpdate.
// Everything here is pure: no I/O, no clock.
package apps

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the apps/v1 resources.
func Resources() []registry.Resource {
	return []registry.Resource{
		deployments(),
		replicaSets(),
		statefulSets(),
		daemonSets(),
		controllerRevisions(),
	}
}
