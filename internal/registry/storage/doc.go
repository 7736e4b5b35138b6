// Package storageapi supplies the registry.Resource description of
// storage.k8s.io/v1 storageclasses. (The package is not called "storage"
// so it does not clash with plainkube's internal/storage.)
//
// Defaults follow upstream: reclaimPolicy Delete and volumeBindingMode
// Immediate. Validation uses upstream's field paths and messages: a
// provisioner that is a qualified name, bounded parameters, supported
// reclaim and binding modes, well-formed allowed topologies, and after
// create no change to provisioner, parameters, reclaimPolicy or
// volumeBindingMode. All functions are pure.
package storageapi

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the storage.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{storageClasses()}
}
