// Package cache is the scheduler's view of the cluster between cycles:
// every node and the pods bound to it, plus the pods the scheduler has
// assumed bound — chosen a node for and sent the binding, before the
// informer reports the pod bound. Counting assumed pods is what lets the
// next cycle, which may start before the watch catches up, see the
// resources they took.
//
// UpdateSnapshot copies the cache into a framework.Snapshot for one
// cycle, cloning only the nodes that changed since the last snapshot, in
// an order that interleaves zones so that the round-robin filtering
// spreads over them.
//
// The cache is a pure core: informer handlers and the scheduling loop
// call it; it has no goroutines and does no I/O. Assumed pods do not
// expire: a binding either succeeds (and the watch confirms it) or fails
// and the scheduler forgets the pod. It is safe for concurrent use.
package cache
