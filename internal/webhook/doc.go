// Package webhook is the API server's client of webhooks: admission
// webhooks (package admission/webhook) and CRD conversion webhooks
// (package apiextensions) call out through it.
//
// A webhook is named by a ClientConfig: a URL, or a Service whose ready
// endpoints (from its EndpointSlices, through EndpointResolver) serve it,
// with TLS to <name>.<namespace>.svc; a caBundle to trust (none: the
// system roots). Clients keeps one http.Client per CA bundle and target,
// so connections stay alive between calls. Errors read as upstream's
// (`Post "<url>": …`), since clients show them word for word.
package webhook
