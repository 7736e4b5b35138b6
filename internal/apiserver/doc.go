// Package apiserver is plainkube's API server: a plain HTTP REST server over
// the storage interface. For each request it parses the path into a
// requestInfo, authenticates and authorizes it, then hands it to the generic
// handler of the resource the path names (create, get, list, watch, update,
// patch, delete, deletecollection), which applies that resource's
// registry.Strategy. It also serves discovery, OpenAPI and health endpoints.
//
// Errors leave the handlers as apimachinery StatusErrors; storage's sentinel
// errors are translated to them in one place (storageError). A panic in a
// handler becomes a 500 for that request only.
package apiserver
