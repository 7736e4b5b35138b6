// Package namespace is plainkube's namespace controller: it empties a
// namespace that is being deleted, then releases it.
//
// Deleting a namespace makes the API server set its deletionTimestamp and
// status.phase Terminating, and keep it while spec.finalizers holds
// "kubernetes". This controller watches namespaces; for one with a
// deletionTimestamp (looked at DeletionDelay after the event, as upstream,
// so that creates racing the deletion have landed) it
//
//  1. discovers every namespaced resource that supports delete (preferred
//     versions, through the discovery API);
//  2. deletes everything of each resource in the namespace, with
//     deletecollection where the resource supports it, else list and
//     delete one by one (metadata client, propagationPolicy Background);
//  3. lists what remains, and records in status.conditions what happened
//     (NamespaceDeletionDiscoveryFailure, NamespaceDeletionGroupVersionParsingFailure,
//     NamespaceDeletionContentFailure, NamespaceContentRemaining,
//     NamespaceFinalizersRemaining, with upstream's reasons and messages);
//  4. if anything remains, looks again later: after half the longest pod
//     grace period or the 15 s finalizer estimate, or with rate-limited
//     backoff after an error — and at once when one of its pods is gone
//     (plainkube's addition: a namespace whose pods stop quickly goes
//     quickly);
//  5. once nothing remains, removes "kubernetes" from spec.finalizers
//     through the finalize subresource, and the API server removes the
//     namespace when no finalizer is left.
//
// It has the one shape of internal/controller, on its Builder: observe (the
// namespace, read live) → plan (plan.go: plan(State) Plan — skip, mark
// Terminating, empty, or nothing left — and the wait while content
// remains, pure, table-tested in plan_test.go) → apply (deleter.go). The
// condition bookkeeping is a pure function of what a pass found
// (conditions.go, conditions_test.go).
package namespace
