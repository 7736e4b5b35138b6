// Package bootstrap is the default RBAC policy: the ClusterRoles,
// ClusterRoleBindings, and kube-system / kube-public Roles and RoleBindings
// that upstream's kube-apiserver creates, so that `kubectl get clusterroles`
// and every built-in identity (system:kube-scheduler,
// system:serviceaccount:kube-system:deployment-controller, …) find what they
// find on any certified cluster. Names, rules, labels and annotations are
// upstream's (transcribed from Kubernetes 1.37 with its default feature
// gates); the Go is plainkube's.
//
// The API server reconciles this policy at every start:
//
//	plan := bootstrap.Reconcile(whatTheClusterHolds, bootstrap.Default())
//
// Reconcile is pure (no client, no clock): it returns a Plan of creates,
// updates and recreates for the caller to write, with upstream's rules —
// missing objects are created; existing ones gain the default's missing
// rules, subjects, aggregation selectors, labels and annotations but lose
// nothing a user added; objects annotated
// rbac.authorization.kubernetes.io/autoupdate=false are left alone.
package bootstrap
