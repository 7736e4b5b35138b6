// Package pvcprotection is upstream's pvc-protection controller: a
// PersistentVolumeClaim carries the kubernetes.io/pvc-protection
// finalizer (the StorageObjectInUseProtection admission plugin adds it on
// create; this controller adds it to claims that lack it), and a claim
// being deleted loses it once no pod uses it, so that a claim never
// disappears under a running pod.
//
// A pod uses a claim when it is scheduled and names the claim in a
// persistentVolumeClaim volume, or names it through an ephemeral volume
// (the claim <pod>-<volume> the pod owns) and has not shut down. Before
// removing the finalizer the controller asks the API server for the
// namespace's pods, since its cache may not show a pod just created.
// Which claims to change is decided by plan (plan.go, table-tested).
package pvcprotection
