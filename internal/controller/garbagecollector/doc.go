// Package garbagecollector is plainkube's garbage collector: it deletes
// objects whose owners are gone, and carries out the foreground and orphan
// deletion policies that the API server only records as finalizers.
//
// It works as upstream's does. Every resource that supports list, watch and
// delete (found through discovery, looked at again every SyncPeriod so that
// custom resources appear) is watched with a metadata-only informer. Each
// informer event becomes an Event applied to Graph, the pure core: a map
// from UID to node with each node's owners and dependents. An owner that a
// reference names but that has not been seen is a "virtual" node until an
// informer reports it or a live read shows it is gone. Applying an event
// yields the UIDs to look at, which go into two rate-limited queues:
//
//   - attemptToDelete: read the object live; if it is waiting for its
//     dependents (deletionTimestamp plus the foregroundDeletion finalizer),
//     remove the finalizer once no dependent with blockOwnerDeletion
//     remains, else queue those dependents. Otherwise classify each owner
//     reference with a live GET of the owner (through a RESTMapper built
//     from discovery, comparing UIDs): solid, dangling (gone or replaced),
//     or waiting (being deleted in the foreground). With a solid owner the
//     dangling and waiting references are patched away; with none the
//     object is deleted: in the foreground if an owner is waiting and the
//     object itself has dependents, otherwise with the policy its own
//     finalizers ask for, or Background.
//   - attemptToOrphan: for an owner with deletionTimestamp and the orphan
//     finalizer, remove its reference from every dependent, then the
//     finalizer.
//
// The graph and its monitors are the collector's own wiring, not the
// controller Builder's: the Builder wires a fixed set of typed informers
// chosen before Run, keyed by namespace/name, while the collector learns
// its resources from discovery as it runs, starts and stops a
// metadata-only informer per resource as they come and go, and keys its
// two queues by UID. What it shares with every controller it takes from
// package controller and reconcile: Base (name, client, logger), the
// rate-limited queues and their workers, and tombstone unwrapping. The
// decision for one object — drop the finalizer, look at the blocking
// dependents, keep it, patch references away, or delete it with which
// policy — is plan(State) Plan (plan.go, pure, table-tested in
// plan_test.go), applied by attemptToDeleteItem.
//
// The collector talks to the API server only: metadata client for reads,
// deletes and JSON merge patches (which carry the object's uid and
// resourceVersion as preconditions), discovery client for resources.
package garbagecollector
