// Package serviceaccount is plainkube's service account controller: it
// makes sure every active namespace has a "default" ServiceAccount (more
// names can be configured), as upstream's serviceaccounts-controller.
//
// The controller watches Namespaces and ServiceAccounts. A namespace that
// is added or updated, or that loses one of the ensured ServiceAccounts,
// is queued; a reconcile reads the namespace and its ServiceAccounts from
// the informer caches (observe), plan (plan.go, pure, table-tested in
// plan_test.go) says which ServiceAccounts to
// create. A namespace that is not Active (being deleted) is left alone.
// Nothing else about a ServiceAccount is managed: it is created empty and
// then belongs to its users.
package serviceaccount
