package metrics

import (
	"plainkube.dev/plainkube/internal/api/metricsapi"
	"plainkube.dev/plainkube/internal/registry"
)

// GroupVersion is metrics.k8s.io/v1beta1.
var GroupVersion = metricsapi.GroupVersion

// handler serves both resources (serve.go).
var handler = registry.Handler{Serve: serve}

// Resources are nodes (NodeMetrics) and pods (PodMetrics).
func Resources() []registry.Resource {
	verbs := []string{"get", "list"}
	return []registry.Resource{
		{Kind: GroupVersion.WithKind("NodeMetrics"), Plural: "nodes", Singular: "", Verbs: verbs, Ephemeral: true, Handler: &handler},
		{Kind: GroupVersion.WithKind("PodMetrics"), Plural: "pods", Singular: "", Namespaced: true, Verbs: verbs, Ephemeral: true, Handler: &handler},
	}
}
