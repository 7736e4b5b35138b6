package apiserver

import (
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/registry"
)

// AggregatedAPI is a group-version another server serves for this one (an
// APIService naming a Service; see internal/aggregator): requests under
// /apis/<group>/<version> go to its Handler once authenticated and
// authorized here.
type AggregatedAPI struct {
	Group, Version string
	Priority       Priority
	// Handler proxies the group-version's requests; nil answers 503
	// (the APIService is not available).
	Handler http.Handler
	// Resources is the server's resource list for the group-version as
	// last fetched, shown in the aggregated discovery document; nil: not
	// fetched yet (listed as stale).
	Resources *metav1.APIResourceList
	// OpenAPIV3URL is where the server serves the group-version's OpenAPI v3
	// document (its /openapi/v3 index's serverRelativeURL); it is listed
	// in this server's index and proxied ("": none).
	OpenAPIV3URL string
}

// aggregatedOpenAPI is what the OpenAPI handler offers for aggregated
// group-versions' documents (openapi.Builder).
type aggregatedOpenAPI interface {
	SetAggregatedV3(docs map[string]string)
}

// SetAggregatedAPIs replaces the set of aggregated group-versions: their
// routes and their place in discovery. An aggregated group-version takes
// the place of a built-in or custom one of the same name, as upstream's
// APIServices decide where a group-version is served.
func (s *Server) SetAggregatedAPIs(apis []AggregatedAPI) {
	routes := make(map[schema.GroupVersion]*AggregatedAPI, len(apis))
	for i := range apis {
		a := &apis[i]
		if a.Group == "" {
			continue // the core group is always served here
		}
		routes[schema.GroupVersion{Group: a.Group, Version: a.Version}] = a
	}
	s.discoMu.Lock()
	defer s.discoMu.Unlock()
	s.aggregated.Store(&routes)
	if o, ok := s.cfg.OpenAPI.(aggregatedOpenAPI); ok {
		docs := map[string]string{}
		for gv, a := range routes {
			if a.Handler != nil && a.OpenAPIV3URL != "" {
				docs["apis/"+gv.Group+"/"+gv.Version] = a.OpenAPIV3URL
			}
		}
		o.SetAggregatedV3(docs)
	}
	s.discoAggregated = slices.Clone(apis)
	s.discovery.set(s.discoResources, s.discoAggregated)
}

// setDiscoveryResources replaces the locally served resources discovery
// lists (built-in and custom).
func (s *Server) setDiscoveryResources(resources []registry.Resource) {
	s.discoMu.Lock()
	defer s.discoMu.Unlock()
	s.discoResources = resources
	s.discovery.set(s.discoResources, s.discoAggregated)
}

// aggregatedAPI is the route of an aggregated group-version, if there is one.
func (s *Server) aggregatedAPI(gv schema.GroupVersion) (*AggregatedAPI, bool) {
	routes := s.aggregated.Load()
	if routes == nil {
		return nil, false
	}
	a, ok := (*routes)[gv]
	return a, ok
}

// serveAggregated proxies a request for an aggregated group-version (its
// API, or its OpenAPI v3 document); false: the request is not for one.
func (s *Server) serveAggregated(w http.ResponseWriter, r *http.Request, info requestInfo) bool {
	gv := schema.GroupVersion{Group: info.Group, Version: info.Version}
	if doc, ok := strings.CutPrefix(r.URL.Path, "/openapi/v3/apis/"); ok {
		g, v, _ := strings.Cut(strings.TrimSuffix(doc, "/"), "/")
		gv = schema.GroupVersion{Group: g, Version: v}
	} else if info.APIPrefix != "apis" || info.Version == "" {
		return false
	}
	a, ok := s.aggregatedAPI(gv)
	if !ok {
		return false
	}
	if a.Handler == nil {
		s.codecs.writeError(w, r, apierrors.NewServiceUnavailable("service unavailable"))
		return true
	}
	a.Handler.ServeHTTP(w, r)
	return true
}
