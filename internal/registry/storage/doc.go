// Package storageapi supplies the registry.Resource descriptions of the
// storage.k8s.io/v1 resources: storageclasses, csidrivers, csinodes
// (+status), csistoragecapacities (namespaced), volumeattachments
// (+status) and volumeattributesclasses, one file each. (The package is
// not called "storage" so it does not clash with plainkube's
// internal/storage.)
//
// Defaults are upstream v1.37's with its default feature gates: a
// StorageClass's reclaimPolicy Delete and volumeBindingMode Immediate; a
// CSIDriver's attachRequired true, fsGroupPolicy ReadWriteOnceWithFSType,
// volumeLifecycleModes [Persistent] and its other switches false.
// Validation uses upstream's field paths and messages, immutable fields
// included (a class's provisioner and parameters, a CSIDriver's
// attachRequired and modes, a CSINode driver's registration, a
// VolumeAttachment's spec, a CSIStorageCapacity's topology and class), and
// upstream's warnings (deprecated node labels in a topology, a CSIDriver
// asking for tokens without serviceAccountTokenInSecrets).
// All functions are pure; the API server's generic handlers drive them,
// and tables come from package printers.
package storageapi

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the storage.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{
		storageClasses(), csiDrivers(), csiNodes(), csiStorageCapacities(), volumeAttachments(), volumeAttributesClasses(),
	}
}
