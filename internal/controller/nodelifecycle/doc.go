// Package nodelifecycle is plainkube's node lifecycle controller: it
// notices nodes that stopped reporting, taints nodes by their conditions,
// and evicts pods from nodes with NoExecute taints they do not tolerate
// (upstream's node lifecycle controller with its taint manager).
//
// The controller has the one shape of internal/controller: Nodes are its
// primary kind, their Leases (kube-node-lease/<node>) and Pods are
// watched, and every event names a node. A reconcile of a node observes
// it (the node, its lease and pods from the caches, folded into what the
// controller remembers of it → State), plans (plan.go: plan(State) Plan,
// pure, table-tested in plan_test.go) and applies the Plan. The plan
// decides, in order:
//
//  1. Health (health.go, pure): a renewed lease (spec.renewTime) or a new
//     Ready heartbeat (lastHeartbeatTime) is a sign of life, timed by the
//     controller's clock. With none for GracePeriod (40 s;
//     StartupGracePeriod, 60 s, for a node that never posted Ready), the
//     node's Ready, MemoryPressure, DiskPressure and PIDPressure conditions
//     become Unknown (reason NodeStatusUnknown, "Kubelet stopped posting
//     node status."; NodeStatusNeverUpdated for conditions never posted).
//     A healthy node is looked at again when its grace period would end.
//  2. Zones (zones.go, pure): nodes are grouped by region and zone; a zone
//     with no ready node is fully disrupted, one with more than two and at
//     least UnhealthyZoneThreshold not ready partially. When every zone is
//     fully disrupted the control plane has most likely lost the nodes
//     rather than the nodes their work, so NoExecute taints are removed
//     and none added until a node is ready again (which then gives every
//     node a fresh grace period).
//  3. Taints (taints.go, pure): NoSchedule taints follow the conditions
//     (not-ready, unreachable, memory/disk/PID pressure, network
//     unavailable) and spec.unschedulable; a NoExecute not-ready or
//     unreachable taint follows Ready False or Unknown and goes when the
//     node is Ready again. Adding a NoExecute taint is rate limited per
//     zone (EvictionQPS, 0.1/s with a burst of one; none in a small
//     partially disrupted zone). Added taints carry timeAdded.
//  4. Pods: on a node whose Ready is Unknown, pods are marked not ready
//     (their Ready condition set to False; on a NotReady node, once, on the
//     transition). A pod is marked at most once until its node is Ready
//     again: if it says Ready again, its kubelet wrote that. A pod that does not tolerate one of the node's NoExecute
//     taints is evicted at once; one that tolerates them all with
//     tolerationSeconds is evicted that long after the taint's timeAdded.
//     Eviction records a DisruptionTarget condition (DeletionByTaintManager)
//     and deletes the pod (graceful; the kubelet, or the pod GC, finishes).
//
// Everything is level-based: what a reconcile does depends on the node, its
// lease and pods as they are, plus a small memory (the health of step 1,
// the zones' token buckets, when each NoExecute taint was first seen, the
// pods marked), so a restarted controller converges again (after one grace
// period). Zone counts are refreshed at most every second while no node's
// readiness is seen to change; apply keeps them current with the
// controller's own writes.
package nodelifecycle
