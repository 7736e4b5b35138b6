// Package claimindex holds the informer indexes that find, for a
// PersistentVolumeClaim, the pods using it and the volumes claimed for
// it, so that the components syncing claims (the PV binder, the
// pvc-protection controller, the scheduler's VolumeBinding plugin) look
// at a claim's own objects rather than at every pod or volume. Components
// that share an informer add an index under the one name given here.
package claimindex
