// Package framework is the scheduler's plugin framework: the types plugins
// see (PodInfo, NodeInfo, Snapshot, CycleState, Status), the plugin
// interfaces for each extension point (PreFilter, Filter, PostFilter,
// PreScore, Score, Reserve/Unreserve, PreBind), and Framework, which
// instantiates one profile's plugins from a Registry and runs them in
// order.
//
// It mirrors upstream kube-scheduler's framework in shape, reduced to what
// plainkube implements. The framework itself is pure (the one exception
// is what plugins do at Reserve and PreBind: a plugin that binds volumes
// writes and waits through the API client the Handle lends it, on the
// binding goroutine). A scheduling cycle reads
// one immutable Snapshot of nodes and the pods on them, so a plugin is a
// function of (pod, snapshot, cycle state) and is tested with a table of
// those. Nothing in this package does I/O, starts goroutines or reads the
// clock.
//
// Outcomes are typed: a plugin returns a *Status whose Code says whether
// the pod fits (Success), cannot fit for now (Unschedulable — preemption
// may help), cannot fit at all (UnschedulableAndUnresolvable), is not the
// plugin's business (Skip), or hit an internal Error. A nil *Status means
// Success. FitError turns the per-node statuses of a failed cycle into
// upstream's message ("0/3 nodes are available: ...").
package framework
