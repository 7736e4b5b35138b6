// Package storageobjectinuseprotection is upstream's
// StorageObjectInUseProtection admission plugin: a PersistentVolumeClaim
// being created gets the kubernetes.io/pvc-protection finalizer and a
// PersistentVolume the kubernetes.io/pv-protection one, so that neither
// disappears while in use; the protection controllers remove them once it
// is not.
package storageobjectinuseprotection
