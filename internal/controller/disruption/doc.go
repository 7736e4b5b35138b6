// Package disruption is plainkube's disruption controller (upstream's
// "disruption-controller"): it keeps the status of every
// PodDisruptionBudget, which the API server's pods/eviction handler reads
// to allow or refuse an eviction.
//
// An event on a budget, or on a pod its selector matches, names the budget
// to look at (a change of a controller's replicas, every budget of its
// namespace whose rule is relative to the scale). A reconcile reads the budget and its pods from the informer
// caches and, when the budget's rule needs it (maxUnavailable, or
// minAvailable as a percentage), the scale of the pods' controllers,
// found through their controller references as upstream's finders do:
// ReplicationController, ReplicaSet (a Deployment's through the
// Deployment), StatefulSet, and any other kind through its /scale
// subresource, custom resources included. plan (plan.go, pure) computes
// the status: expectedPods, desiredHealthy, currentHealthy (ready pods not
// being deleted nor recently evicted), disruptionsAllowed, the
// disruptedPods the eviction handler recorded (dropped once the pod is
// being deleted or DeletionTimeout has passed without it), the
// DisruptionAllowed condition and observedGeneration. A budget whose status
// cannot be computed gets disruptionsAllowed 0 and the SyncFailed reason.
//
// A second queue sets back to False the DisruptionTarget condition of a
// pod that an eviction marked but that was not deleted within
// stalePodDisruptionTimeout.
package disruption
