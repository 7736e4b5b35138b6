// Package sim runs simulated nodes: many Node objects, each driven through
// the API server exactly as a kubelet drives its own, with no containers
// behind them. It is for testing schedulers, autoscalers and controllers at
// scale (thousands of nodes in one process), and for test environments that
// need pods to run somewhere.
//
// A Sim is a client of the API server and nothing else (it takes a
// *rest.Config, so it runs against plainkube or any other cluster). Run
// registers the nodes — labelled plainkube.dev/simulated=true, with a pod
// CIDR, addresses, capacity and a runtime version of sim://… — and then
// drives them until its context ends:
//
//   - Heartbeats. One delaying queue holds every node, spread evenly over the
//     heartbeat interval; a small pool of workers renews each node's Lease in
//     kube-node-lease every HeartbeatInterval and refreshes its status
//     conditions at least every StatusInterval. A node annotated
//     sim.plainkube.dev/stopped=true is a dead machine: no Lease renewals, no
//     status, no pod updates; removing the annotation brings it back at once.
//     A node whose object is deleted is no longer driven (as a kubelet whose
//     Node was deleted), until Run starts again.
//   - Pods. One shared informer watches pods with spec.nodeName set (and
//     keeps those on this Sim's nodes); a workqueue reconciles each pod and
//     re-adds it, with AddAfter, at the time of its next transition — there
//     is no goroutine per pod or per node. The lifecycle itself is a pure
//     function, decide(pod, env, now), that returns the status a kubelet
//     would report at now and when the next transition is due: Pending,
//     init containers run in order, containers started with a pod IP from
//     the node's CIDR, Ready (honouring readiness gates), exits, restarts
//     with CrashLoopBackOff, terminal phases, and graceful deletion (the
//     pod is deleted with gracePeriodSeconds=0 and a UID precondition once
//     its grace period is over, or at once when nothing is running).
//
// Pod behaviour is set by annotations (durations in Go syntax, or seconds):
//
//	sim.plainkube.dev/start-delay: 1s   containers start this long after the pod is seen
//	sim.plainkube.dev/ready-after: 2s   containers become ready this long after starting
//	sim.plainkube.dev/exit-after: 5s    containers exit this long after starting
//	sim.plainkube.dev/exit-code: "1"    ... with this exit code (default 0)
//	sim.plainkube.dev/stop-delay: 0s    containers stop this long after a graceful
//	                                    deletion starts (default: the whole grace period)
//
// What happens after an exit follows spec.restartPolicy as a kubelet does:
// Never ends in Succeeded or Failed; OnFailure restarts on a non-zero code
// and Always on any code, with upstream's back-off (immediately the first
// time, then 10s doubling to 5m) shown as a CrashLoopBackOff waiting state.
//
// Every time the package records is truncated to the second, as the API
// stores it, and every decision is derived from what the pod's status
// records, so a restarted Sim carries on where the last one stopped.
// The clock is injected (Options.Clock), which makes the lifecycle
// testable with a fake clock.
package sim
