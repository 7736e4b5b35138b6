// Package stats is the node agent's resource usage summary: the types of
// the kubelet summary API (/stats/summary, upstream's stats/v1alpha1 JSON),
// and the pure computation of a Summary from two samples of cumulative
// counters, as upstream's kubelet derives usageNanoCores: the CPU time used
// between two samples divided by the time between them.
//
// A Sample is read by the agent every Interval: the node's CPU time and
// memory from /proc (ReadNode), each running container's CPU time and
// memory from the container runtime (CRI ListContainerStats). Summarize
// turns the newest sample and the one before it into a Summary; the API
// server's metrics.k8s.io API serves NodeMetrics and PodMetrics from it.
package stats
