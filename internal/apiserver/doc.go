// Package apiserver is plainkube's generic API server: a plain HTTP REST
// server over the storage interface. For each request it parses the path
// into a requestInfo, authenticates and authorizes it, then hands it to the
// generic handler of the resource the path names (create, get, list, watch,
// update, patch, delete, deletecollection), which applies that resource's
// registry.Strategy; every write also passes through the Config's one
// admission chain (package admission). It serves discovery, OpenAPI,
// health and the service-account issuer's discovery documents.
//
// What a resource does beyond the generic verbs is the resource's own
// (registry.Resource): status is served generically (with the resource's
// Strategy), scale generically through the resource's registry.Scale, a Part
// (pods' ephemeralcontainers, a namespace's finalize) by the generic get,
// update and patch of that part, and the rest — pods/binding, log, exec,
// the proxies, serviceaccounts/token, and whole resources that are not
// stored (reviews, metrics.k8s.io) — by the Handler the resource declares,
// to which the server lends itself through registry.API (handlers.go).
//
// The set of resources is not fixed: SetCustomResources installs custom
// resources at run time (the CRD controllers of package apiextensions call
// it). Each served version is a resourceStore over unstructured objects,
// whose storage, conversion, pruning, scale and field managers are package
// custom's; the versions of one resource share a watch cache; discovery
// and OpenAPI are rebuilt when the set changes.
//
// Errors leave the handlers as apimachinery StatusErrors; storage's sentinel
// errors are translated to them in one place (storageError). A panic in a
// handler becomes a 500 for that request only.
package apiserver
