// Package scheduling supplies the registry.Resource description of
// scheduling.k8s.io/v1 priorityclasses.
//
// Defaults follow upstream (preemptionPolicy PreemptLowerPriority), and so
// does validation: user classes may not exceed 1,000,000,000, names with
// the "system-" prefix are reserved for the two built-in classes with their
// exact values, and value and preemptionPolicy never change after create.
//
// Not here: upstream's Priority admission plugin, which allows only one
// globalDefault class and resolves pods' priorities.
package scheduling

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the scheduling.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{priorityClasses()}
}
