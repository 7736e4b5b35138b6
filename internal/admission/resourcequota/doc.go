// Package resourcequota is the ResourceQuota admission plugin: each create
// (and each update that changes usage) in a namespace is charged against
// the namespace's ResourceQuotas — their scopes and scopeSelector decide
// which apply — and refused with upstream's "exceeded quota" message when
// it would go over one. The charge is recorded at once in the quota's
// status.used, written through the API with the quota's resourceVersion
// (compare-and-swap), so that concurrent writes cannot both take the last
// unit: within one server the writes of a namespace are charged one at a
// time, and a conflict with another server re-reads the quota and checks
// again. Dry runs are checked but not charged.
//
// What a resource uses is package internal/api/quota's; the quotas are
// read from an informer over the API server's loopback client. The
// resource quota controller (internal/controller/resourcequota) recounts
// status.used from the objects there are, giving back what deleted
// objects used.
package resourcequota
