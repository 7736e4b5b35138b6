// Package sim runs simulated nodes: many Node objects, each driven through
// the API server exactly as a kubelet drives its own, with no containers
// behind them. It is for testing schedulers, autoscalers and controllers at
// scale (thousands of nodes in one process), and for test environments that
// need pods to run somewhere.
//
// A Sim is a client of the API server and nothing else (it takes a
// *rest.Config, so it runs against plainkube or any other cluster). Run
// registers the nodes (labelled LabelSimulated, with a pod CIDR, addresses,
// capacity and RuntimeVersion) and drives them until its context ends:
//
//   - Heartbeats. One delaying queue holds every node, spread over the
//     heartbeat interval; a few workers renew each node's Lease and refresh
//     its conditions. A node annotated AnnotationStopped is a dead machine
//     until the annotation goes; a deleted Node is no longer driven.
//   - Pods. One shared informer and a workqueue reconcile each pod of its
//     nodes and re-add it at the time of its next transition (no goroutine
//     per pod or node). The lifecycle is a pure function, decide(pod, env,
//     now): the status a kubelet would report at now — init containers in
//     order, pod IPs from the node's CIDR, readiness, exits, restarts with
//     back-off, graceful deletion — and when the next transition is due.
//     Pod annotations (AnnotationStartDelay and the others) set the timing.
//   - Usage. A simulated pod declares what its running containers use in
//     the annotations sim.plainkube.dev/cpu-usage and memory-usage (per
//     container; see package metricsapi): the API server's metrics.k8s.io
//     serves them in place of an agent's usage summary, so `kubectl top`
//     and the HorizontalPodAutoscaler see them. The Sim itself reports
//     only the containers' states those figures apply to.
//
// Every decision is derived from what the pod's status records (times to
// the second, as the API stores them), so a restarted Sim carries on where
// the last one stopped; the clock is injected (Options.Clock). Pod phase
// and node conditions are computed as the real agent's are (packages
// podstatus and nodestatus).
package sim
