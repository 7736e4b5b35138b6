// Package events is how the node agent tells people what it did to a
// pod: upstream's kubelet events (Pulled, Created, Started, Killing,
// Unhealthy, BackOff, Failed, FailedMount, …), recorded through the API
// server as component "kubelet" with the node as host. Events about one
// container refer to the pod with the container's field path
// (spec.containers{name}), as upstream's do.
//
// The agent (internal/kubelet) starts one Recorder and hands it to the
// rooms that act on pods (volumes, probes and hooks); none of them waits
// on it: recording never blocks or fails.
package events
