// Package pvprotection is upstream's pv-protection controller: a
// PersistentVolume carries the kubernetes.io/pv-protection finalizer (the
// StorageObjectInUseProtection admission plugin adds it on create; this
// controller adds it to volumes that lack it), and a volume being deleted
// loses it once it is no longer Bound to a claim. Which volumes to change
// is decided by plan (table-tested).
package pvprotection
