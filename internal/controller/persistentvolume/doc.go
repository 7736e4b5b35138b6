// Package persistentvolume is upstream's PersistentVolume binder
// (kube-controller-manager's persistentvolume-binder-controller): it binds
// PersistentVolumeClaims to PersistentVolumes and keeps both phases.
//
// A claim without spec.volumeName gets the volume upstream would pick
// (bestMatch, match.go): one pre-bound to it (claimRef), else the smallest
// Available, unclaimed volume of its class, volume mode and volume
// attributes class, big enough and matching its selector, among the
// volumes whose access modes hold the claim's (the smallest such set of
// modes first). The matching is k8s.io/component-helpers' (as upstream's),
// the one the scheduler's VolumeBinding plugin uses. A claim naming its
// volume gets that one if it fits.
// Binding writes the volume's claimRef (and pv.kubernetes.io/bound-by-
// controller when the controller chose it) and phase Bound first, then the
// claim's volumeName, pv.kubernetes.io/bind-completed and phase Bound with
// the volume's capacity and access modes; a second claim racing for the
// same volume loses on its resourceVersion and tries again.
//
// A claim of a WaitForFirstConsumer class is left Pending (events
// WaitForFirstConsumer or WaitForPodScheduled) until the scheduler writes
// volume.kubernetes.io/selected-node; a claim of a class with a
// provisioner and no volume is handed to it with the
// volume.kubernetes.io/storage-provisioner annotations (event
// ExternalProvisioning): the built-in local-path provisioner
// (internal/controller/localpath) or any external one. A bound claim
// whose volume is gone, or taken by another, is Lost.
//
// A volume is Available when unclaimed or pre-bound, Bound when its
// claim is bound to it, Released when its claim is gone. Then its reclaim
// policy: Retain keeps it Released; Delete deletes volumes of plainkube's
// local-path provisioner (the node holding the folder removes it through
// the volume's cleanup finalizer), leaves other provisioners' volumes to
// them, and fails others (no deleter, as upstream without a volume
// plugin); Recycle fails (no recycler). Messages and reasons are
// upstream's.
//
// Decisions are pure functions of cached objects (planClaim, planVolume
// in plan.go; bestMatch in match.go), table-tested; the controller
// observes claims, volumes, StorageClasses and pods, and writes. Its one
// queue holds claim and volume keys; claims are looked at again every
// Resync (15 s, upstream's period), so that a claim waiting for a volume
// finds one made later.
package persistentvolume
