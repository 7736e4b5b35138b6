// Package rbac is the RBAC authorizer (rbac.authorization.k8s.io/v1): it
// answers "may this user do this" from Roles, ClusterRoles and their
// bindings, as upstream's kube-apiserver does, and says what a user holds
// (RulesFor) so that the API server can refuse a role or binding that would
// grant more than its creator has (escalation prevention, with the
// published k8s.io/component-helpers/auth/rbac/validation.Covers).
//
// It reads bindings and roles from watch caches through a Source, indexed
// by subject, so a decision looks only at the bindings naming the user, one
// of their groups or their ServiceAccount — not at every binding. RBAC only
// allows: a request no rule matches gets NoOpinion, and the next
// authorizer in the chain (or the final 403) decides.
//
// The pure part — does a rule cover a request (rules.go), does a subject
// name a user (subjects.go) — is table-tested on its own. The default
// policy every server reconciles at start is package bootstrap.
package rbac
