// Package rbacescalation is RBAC's escalation prevention, as an admission
// plugin on Roles, ClusterRoles and their bindings: a user may create or
// change a role only with rules they hold themselves (or the escalate
// verb on it), and bind a role only if they hold its rules (or the bind
// verb on it) — so the right to write RBAC objects is not the right to
// grant anything. Upstream does the same in its RBAC storage; the messages
// are upstream's.
package rbacescalation
