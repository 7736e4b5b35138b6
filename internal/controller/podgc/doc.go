// Package podgc is plainkube's pod garbage collector: it force-deletes
// (grace period 0) pods nobody else will finish, as upstream's podgc
// controller:
//
//   - orphaned pods, bound to a node that no longer exists: a node missing
//     from the cache is quarantined for Quarantine (40 s) and then checked
//     with a GET before its pods are marked Failed with the
//     DisruptionTarget condition (reason DeletionByPodGC) and deleted;
//   - terminating pods that were never scheduled;
//   - terminating pods on a node that is not Ready and carries the
//     node.kubernetes.io/out-of-service taint;
//   - terminated pods (Succeeded or Failed) beyond TerminatedPodThreshold
//     (12500), evicted ones first, then oldest first.
//
// Pods not yet terminal are marked Failed (a status patch) before they are
// deleted, since no kubelet will.
//
// The controller watches Pods and Nodes. Its work is one pass over all
// pods (key "pods" in its queue), run every Period (20 s) and sooner when
// a node is deleted or a pod shows up bound to an unknown node or
// terminating unscheduled. What to delete is decided by plan (plan.go,
// table-tested in plan_test.go), a
// pure function of the cached pods and nodes, the time and the quarantine
// state; the pass then carries it out.
package podgc
