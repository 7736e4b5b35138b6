// Package apiserver is plainkube's API server: a plain HTTP REST server over
// the storage interface. For each request it parses the path into a
// requestInfo, authenticates and authorizes it, then hands it to the generic
// handler of the resource the path names (create, get, list, watch, update,
// patch, delete, deletecollection), which applies that resource's
// registry.Strategy; every write also passes through the Config's one
// admission chain (package admission), at its fixed points. It also
// serves discovery, OpenAPI and health endpoints, and, with
// Config.ServiceAccounts, the service-account issuer's discovery
// documents.
//
// The set of resources is not fixed: besides the built-in resources of
// Config, SetCustomResources installs custom resources at run time (the CRD
// controllers of package apiextensions call it). Each served version is a
// resourceStore of its own over *unstructured.Unstructured objects, whose
// storage, conversion, pruning, scale and field managers are package
// custom's; the versions of one resource share a watch cache. Custom
// objects are never served as protobuf and patched with every patch type
// but strategic merge (415, as upstream). Discovery and OpenAPI are
// rebuilt when the set changes.
//
// Subresources are served as their resource declares (registry.Resource):
// status and scale by the generic handlers, a Part (pods'
// ephemeralcontainers, a namespace's finalize) by the generic get, update
// and patch of that part, and the rest (pods/binding, log, exec, proxy,
// serviceaccounts/token…) by the resource's own registry.Handler, to which
// the server lends itself through registry.API (handlers.go).
//
// Resources that are not stored (Ephemeral) are answered wholly by their
// Handler: the access and token reviews (internal/registry/reviews, from
// the server's authenticator and authorizer) and metrics.k8s.io
// (internal/registry/metrics).
//
// Errors leave the handlers as apimachinery StatusErrors; storage's sentinel
// errors are translated to them in one place (storageError). A panic in a
// handler becomes a 500 for that request only.
package apiserver
