// Package queue is the scheduling queue: the pending pods a scheduler
// owns, in three sets, as upstream's.
//
//   - active: pods ready to be tried, popped by priority (spec.priority,
//     higher first), then creation time;
//   - backoff: pods that failed recently and wait out a backoff (initial
//     1 s, doubling per attempt up to 10 s) before becoming active;
//   - unschedulable: pods that fit nowhere; they wait for a cluster event
//     that one of the plugins that rejected them registered for (a node
//     added or changed, a pod deleted, ...), or for five minutes, then go
//     back to backoff or active.
//
// Pods with scheduling gates are held aside until their gates are
// removed. The queue also keeps the nominator: which pending pods
// preemption nominated to which node.
//
// The queue is a pure core: no goroutines, the clock is injected, and it
// does nothing on its own. Its driver adds and updates pods from informer
// events, pops pods to schedule, reports failures with AddUnschedulable,
// forwards cluster events with MoveOnEvent, and calls Flush periodically
// (every second) to move pods whose backoff or unschedulable timeout
// expired. Ready returns a channel signalled when pods become active. All
// methods are safe for concurrent use.
package queue
