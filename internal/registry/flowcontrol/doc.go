// Package flowcontrol supplies the registry.Resource descriptions of
// flowcontrol.apiserver.k8s.io/v1 flowschemas and
// prioritylevelconfigurations, the API Priority and Fairness configuration.
//
// Defaults and validation follow upstream, including the rules that keep
// the mandatory objects (exempt and catch-all) at their fixed specs; the
// objects themselves come from k8s.io/apiserver's bootstrap package, and the
// API server creates them at start (internal/server). plainkube stores these
// objects but does not act on them: its API server limits requests with a
// plain max-in-flight limit, not by priority level.
package flowcontrol

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the flowcontrol.apiserver.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{flowSchemas(), priorityLevelConfigurations()}
}
