// Package metricsapi holds what both sides of the metrics.k8s.io/v1beta1
// API share: the wire types (NodeMetrics, PodMetrics, with upstream's
// JSON), which the API server's metrics registry serves and the
// HorizontalPodAutoscaler controller reads, and the usage a simulated
// pod declares in its annotations (SimulatedUsage), which the registry
// serves for pods on simulated nodes in place of a node agent's summary.
package metricsapi
