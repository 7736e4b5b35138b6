// Package replicaset is plainkube's ReplicaSet and ReplicationController
// controller: it keeps the number of pods each one asks for, as upstream's
// replicaset-controller and replication-controller do.
//
// One generic core serves both kinds (kinds.go adapts each to a workload:
// replicas, selector, pod template, minReadySeconds and a common status).
// Each kind has its own loop — queue, expectations, event source — fed by
// informers on the kind and on pods. A reconcile of one workload
//
//  1. lists the active pods of its namespace (not terminal, not being
//     deleted) from the informer cache and claims them: pods controlled by
//     the workload stay if the selector still matches, else they are
//     released; orphans that match are adopted (after a live GET shows the
//     workload is not being deleted), through strategic merge patches of
//     ownerReferences;
//  2. if the workload's expectations are satisfied, creates or deletes the
//     difference (at most BurstReplicas at a time): creates go in slow-start
//     batches of 1, 2, 4, … stopping at the first error; deletes take the
//     pods ranked first by upstream's ordering (unscheduled, pending, not
//     ready, lower deletion cost, doubled up on a node with pods of the same
//     owner, ready for less time, more restarts, newer — times compared on
//     a log2 scale);
//  3. writes status (replicas, fullyLabeledReplicas, readyReplicas,
//     availableReplicas honouring minReadySeconds, terminatingReplicas for
//     ReplicaSets, observedGeneration, and a ReplicaFailure condition while
//     creates or deletes fail), and looks again after minReadySeconds when
//     ready pods are not yet available.
//
// Expectations make bursts of informer events safe: after asking for N
// creates (or naming the pods it deletes) the loop does not manage replicas
// again until the informer has shown them all, or five minutes pass.
//
// Events are upstream's: SuccessfulCreate "Created pod: <name>",
// FailedCreate "Error creating: <err>", SuccessfulDelete, FailedDelete.
//
// The controller has the one shape of internal/controller, wired by its
// Builder: observe (apply.go: the workload and its namespace's pods from
// the caches → State), plan (plan.go: plan(State) Plan — claims, creates,
// deletes — and planStatus, pure, table-tested in plan_test.go; ranking
// and status in pods.go and status.go), apply (apply.go).
package replicaset
