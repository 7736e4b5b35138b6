// Package webhook is the MutatingAdmissionWebhook and
// ValidatingAdmissionWebhook admission plugins: it calls the webhooks of
// the MutatingWebhookConfigurations and ValidatingWebhookConfigurations
// stored in the API, as upstream's do.
//
// The configurations, and the namespaces whose labels namespaceSelectors
// match, are read through informers over the API server's loopback client
// (Source), so a new configuration takes effect as soon as its watch event
// arrives; until the informers have their first list the plugins refuse
// requests, as upstream's do. For each request a webhook is called when
// its rules (operations, groups, versions, resources and subresources with
// wildcards, scope), namespaceSelector, objectSelector and matchConditions
// (CEL, with upstream's compiler) match (match.go); with matchPolicy
// Equivalent a rule naming another version of the resource matches too,
// and the webhook sees the object at that version. The AdmissionReview
// (v1, or v1beta1 when a webhook accepts only that) goes out through the
// shared webhook client (package internal/webhook).
//
// Mutating webhooks run one after another in the order of their
// configurations' names, their JSON patches applied in turn; those with
// reinvocationPolicy IfNeeded run once more if a later one changed the
// object. Validating webhooks run in parallel. Denials, call failures
// (failurePolicy Fail; Ignore admits), dry-run refusals and timeouts give
// upstream's messages; warnings and audit annotations are passed on.
package webhook
