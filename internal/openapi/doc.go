// Package openapi generates and serves the API server's OpenAPI documents:
// /openapi/v2 (Swagger 2.0, as JSON or as gnostic protobuf) and
// /openapi/v3 with one OpenAPI 3.0 document per group version.
//
// Clients depend on these documents: kubectl looks up the PATCH operation
// of a kind in /openapi/v3 to learn whether the server validates fields
// (the fieldValidation parameter), computes strategic merge patches for
// client-side apply from the x-kubernetes-patch-* extensions, and explains
// fields from the descriptions; with no v3 it falls back to /openapi/v2,
// which it fetches only as protobuf.
//
// # How the documents are made
//
// Nothing is written by hand. Where a module publishes the definitions
// upstream's generator made (apiextensions-apiserver: apimachinery's meta
// types, the special scalars, autoscaling/v1, the CRD types;
// kube-aggregator: apiregistration), they are used as published (see
// generated.go). The rest of the schemas come from reflection over the Go
// types registered in a runtime.Scheme (the k8s.io/api types), following
// the rules of upstream's generator:
//
//   - struct fields become properties, named by their json tags, with
//     inline embedded structs flattened; a field without omitempty is
//     required, and gets a default when upstream's generator enforces
//     one ({} for a struct held by value, the zero value of an always
//     written scalar);
//   - comment markers do not survive compilation, so gen_markers.go reads
//     them from k8s.io/api's source into markers_generated.go: +optional
//     on a field without omitempty and +required on one with it change
//     what is required, +listType/+listMapKey/+mapType give the topology
//     of types client-go has no schema for (below), +union structs get
//     x-kubernetes-unions;
//   - descriptions come from each type's SwaggerDoc method;
//   - patchStrategy/patchMergeKey struct tags become
//     x-kubernetes-patch-strategy/x-kubernetes-patch-merge-key;
//   - list and map topology (x-kubernetes-list-type, -list-map-keys,
//     -map-type) and v3 field defaults come from the structured-merge-diff
//     schema client-go embeds for its apply configurations, which was
//     generated from upstream's OpenAPI (see hints.go); for types it does
//     not know, a merge key makes a list a map keyed by it;
//   - types that declare their own schema (OpenAPISchemaType and friends:
//     Time, MicroTime, Duration, Quantity, IntOrString) and types with their
//     own JSON form (RawExtension, FieldsV1, apiextensions' JSON) get the
//     schemas upstream gives them;
//   - definitions are named as upstream names them (io.k8s.api.core.v1.Pod)
//     and carry x-kubernetes-group-version-kind when the scheme registers
//     the type as a kind.
//
// Paths come from the registry.Resource list: for each resource its
// collection, item, all-namespaces list, deprecated /watch/ and
// subresource paths, with upstream's operation IDs
// (readCoreV1NamespacedPod), descriptions, x-kubernetes-action,
// x-kubernetes-group-version-kind and media types. Query parameters are
// the fields of the options kinds (ListOptions, PodLogOptions...) with
// their documentation; those every operation of a path takes are listed
// on the path. internal/server's TestOpenAPIV3MatchesUpstream compares
// the result with upstream's published documents.
// Resources whose kind has no Go type (custom resources) get a schema that
// keeps unknown fields unless SetCustomResourceSchemas supplies one, and
// no strategic merge patch.
//
// # How it is driven
//
// New(resources, scheme) returns a Builder, an http.Handler for the
// /openapi/ paths. Documents are built on the first request for them
// (a few tens of milliseconds for every built-in group) and cached;
// SetResources (for example when custom resources change) starts a fresh
// generation, built again on the next request. The v3 index links each
// document by the SHA-512 of its content, so clients may cache them
// forever.
package openapi
