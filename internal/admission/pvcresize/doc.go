// Package pvcresize is upstream's PersistentVolumeClaimResize admission
// plugin: growing the storage request of a PersistentVolumeClaim is
// refused unless the claim is Bound and its StorageClass (the same before
// and after) sets allowVolumeExpansion: true, with upstream's messages.
//
// plainkube's own local-path provisioner cannot expand a volume (a
// folder's size is not enforced, as k3s's local-path-provisioner), so the
// built-in class local-path does not allow expansion and a claim of it is
// refused here. A class of another provisioner that allows expansion
// passes; expanding its volumes is that provisioner's resizer's work.
package pvcresize
