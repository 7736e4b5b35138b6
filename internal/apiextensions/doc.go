// Package apiextensions runs the controllers that make
// CustomResourceDefinitions work, inside the API server's process but as
// API clients through the loopback config (docs/architecture.md, rule 1), sharing one
// CRD informer:
//
//   - serving (package serving) hands the API server the custom resources
//     to route, list in discovery and publish in OpenAPI;
//   - naming (package naming) accepts names and sets NamesAccepted;
//   - establishing (package establish) sets Established once routes serve;
//   - finalizing (package finalizer) deletes a deleted CRD's instances.
//
// How a CRD becomes objects' rules is package customresource; the CRD
// resource itself is internal/registry/apiextensions.
package apiextensions
