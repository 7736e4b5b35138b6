// Package apiextensions supplies the registry.Resource description of
// apiextensions.k8s.io/v1 customresourcedefinitions: cluster-scoped, with a
// status subresource, short name crd and category api-extensions.
//
// Its rules are upstream's, from the published packages of
// k8s.io/apiextensions-apiserver: v1 defaulting (singular and listKind
// names, conversion strategy None, webhook service port 443), validation by
// pkg/apis/apiextensions/validation on the internal version (names, scope,
// versions, structural schemas, defaults, CEL rules, subresources, printer
// columns, selectable fields), and the strategy's bookkeeping: status is
// cleared on create, the storage version is recorded in
// status.storedVersions, generation tracks spec changes. Unlike upstream,
// the customresourcecleanup.apiextensions.k8s.io finalizer is added when
// the CRD is created (upstream adds it on the first delete), so the generic
// delete path leaves the CRD in place until its instances are gone.
package apiextensions
