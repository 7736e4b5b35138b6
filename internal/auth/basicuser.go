package auth

import (
	"context"
	"strings"
)

// BasicUserAuthorizer allows every authenticated user what upstream's
// default policy binds to system:authenticated: API discovery and OpenAPI
// (system:discovery) and asking about oneself (system:basic-user:
// selfsubjectaccessreviews, selfsubjectrulesreviews, selfsubjectreviews).
// Interim, until RBAC serves these as its bootstrap roles.
type BasicUserAuthorizer struct{}

var discoveryPaths = map[string]bool{"/api": true, "/apis": true, "/openapi": true, "/healthz": true, "/livez": true,
	"/readyz": true, "/version": true, "/version/": true}

func (BasicUserAuthorizer) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if a.User == nil || !a.User.InGroup(GroupAuthenticated) {
		return NoOpinion, "", nil
	}
	if !a.IsResource {
		if a.Verb == "get" && (discoveryPaths[a.Path] || strings.HasPrefix(a.Path, "/api/") ||
			strings.HasPrefix(a.Path, "/apis/") || strings.HasPrefix(a.Path, "/openapi/")) {
			return Allow, "", nil
		}
		return NoOpinion, "", nil
	}
	if a.Verb != "create" || a.Subresource != "" {
		return NoOpinion, "", nil
	}
	switch {
	case a.APIGroup == "authorization.k8s.io" && (a.Resource == "selfsubjectaccessreviews" || a.Resource == "selfsubjectrulesreviews"),
		a.APIGroup == "authentication.k8s.io" && a.Resource == "selfsubjectreviews":
		return Allow, "", nil
	}
	return NoOpinion, "", nil
}
