// Package clusterroleaggregation fills the rules of every ClusterRole that
// has an aggregationRule with the rules of the ClusterRoles its selectors
// match, as upstream's clusterrole-aggregation controller: admin, edit and
// view have no rules of their own, and a CRD's chart extends them by
// labelling a ClusterRole rbac.authorization.k8s.io/aggregate-to-view.
//
// plan (plan.go, table-tested in plan_test.go) is pure: from the
// aggregated role and every ClusterRole,
// the rules it should have, or none to write. Any ClusterRole's change
// enqueues every aggregated one.
package clusterroleaggregation
