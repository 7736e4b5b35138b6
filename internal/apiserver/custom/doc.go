// Package custom is how the API server serves custom resources, the
// resources CustomResourceDefinitions teach it at run time. A Resource
// (built from a CRD by internal/apiextensions/customresource) describes
// every version of one; the server gives each served version a store whose
// objects are *unstructured.Unstructured and asks this package, through
// Served, what differs from a built-in resource: objects are stored as
// JSON in the storage version and converted to the served one on read
// (relabelled, or by the CRD's conversion webhook), pruned and defaulted
// by the version's schema; the scale subresource reads the paths the CRD
// names; field managers take their types from the schemas.
//
// Routing, watch caches, discovery and OpenAPI of the set stay the
// server's (Server.SetCustomResources), as for built-in resources.
package custom
