// Package storagemigration supplies the registry.Resource description of
// storagemigration.k8s.io/v1 storageversionmigrations, with status.
//
// Validation follows upstream: spec.resource names a resource (a DNS-1035
// label) and optionally its group (a DNS subdomain), and never changes;
// status.resourceVersion is set once; the Succeeded and Failed
// conditions exclude each other and, once True, stay True. plainkube
// runs no storage version migration controller: the objects are stored
// and validated, nothing rewrites the stored objects they name.
package storagemigration
