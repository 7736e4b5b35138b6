// Package metrics is the metrics.k8s.io/v1beta1 API (NodeMetrics and
// PodMetrics, what `kubectl top` reads), served as metrics-server would.
// Its resources are not stored: their registry.Handler, which the API
// server routes every request of them to, makes them on each get or list
// from the usage summaries (/stats/summary) of the node agents concerned,
// fetched with the API server's kubelet client (registry.API). Simulated
// nodes run no agent API: their pods' usage is what each pod declares in
// its annotations (metricsapi.SimulatedUsage, for its running containers),
// and a simulated node's is the sum of its pods'. Other nodes whose agent
// cannot be reached have no metrics, nor have their pods. The wire types
// are package metricsapi's, with upstream's JSON.
package metrics
