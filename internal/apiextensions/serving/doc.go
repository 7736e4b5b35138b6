// Package serving is the CRD controller that teaches the API server its
// custom resources: it watches CustomResourceDefinitions (through the API,
// like every controller) and hands the API server the set it must serve —
// every CRD whose names are accepted or that is established, each built by
// package customresource. The API server then routes, lists in discovery
// and publishes in OpenAPI what it is given (established CRDs only in
// discovery and OpenAPI, as upstream).
//
// It is level-based: every change to any CRD reconciles the whole set (one
// key). Descriptions are rebuilt only for CRDs whose resourceVersion
// changed, since compiling schemas and CEL rules is not free. Once the set
// has been installed after the informer synced, Synced is closed: the API
// server is ready only then, so custom resources survive a restart.
// Established is reported to the establishing controller (OnInstalled)
// only after the routes serve.
package serving
