// Package metrics lists the metrics.k8s.io/v1beta1 resources (NodeMetrics
// and PodMetrics, what `kubectl top` reads). They are not stored: the API
// server makes them on each request from the node agents' usage summaries
// (internal/apiserver/metrics.go), as metrics-server would.
package metrics

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/registry"
)

// GroupVersion is metrics.k8s.io/v1beta1.
var GroupVersion = schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}

// Resources are nodes (NodeMetrics) and pods (PodMetrics).
func Resources() []registry.Resource {
	verbs := []string{"get", "list"}
	return []registry.Resource{
		{Kind: GroupVersion.WithKind("NodeMetrics"), Plural: "nodes", Singular: "", Verbs: verbs, Ephemeral: true},
		{Kind: GroupVersion.WithKind("PodMetrics"), Plural: "pods", Singular: "", Namespaced: true, Verbs: verbs, Ephemeral: true},
	}
}
