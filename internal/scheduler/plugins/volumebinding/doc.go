// Package volumebinding is the VolumeBinding plugin: it schedules a pod
// only where its PersistentVolumeClaims can be served, and binds the
// claims that wait for their first consumer before the pod is bound.
//
// PreFilter reads the pod's claims (missing, lost or deleting claims and
// unbound claims of immediate binding make the pod unschedulable); Filter
// checks, per node, that bound claims' volumes are reachable from it
// (their node affinity) and that each unbound WaitForFirstConsumer claim
// has an Available volume reachable from it or a class that can
// provision one there. Reserve keeps the volumes chosen for the node
// from other pods; PreBind, on the binding goroutine, writes the choice
// through the API (a volume's claimRef, or the claim's
// volume.kubernetes.io/selected-node annotation for the provisioner) and
// waits, up to the bind timeout, until the PV controller has bound every
// claim. Unreserve forgets the reservation. The matching rules are
// component-helpers' storage/volume, shared with the PV controller.
package volumebinding
