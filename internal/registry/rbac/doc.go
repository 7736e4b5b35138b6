// Package rbac supplies the registry.Resource descriptions of the
// rbac.authorization.k8s.io/v1 group: roles, rolebindings, clusterroles and
// clusterrolebindings.
//
// Defaults follow upstream: a binding's roleRef.apiGroup and its User and
// Group subjects' apiGroup default to rbac.authorization.k8s.io. Validation
// uses upstream's field paths and messages: every rule names verbs,
// resource rules name apiGroups and resources, non-resource URLs only in
// cluster roles, roleRef kind and group, subject kinds, and roleRef may not
// change after create ("cannot change roleRef"). Names only need to be
// valid path segments, as upstream allows (e.g. "system:controller:…").
//
// Not here: upstream's escalation checks (a user may only create roles
// granting permissions they hold, or bind roles with the "bind" verb).
// They need the authorizer and belong to the API server's RBAC wiring.
package rbac

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the rbac.authorization.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{roles(), roleBindings(), clusterRoles(), clusterRoleBindings()}
}
