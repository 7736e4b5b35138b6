// Package certificates supplies the registry.Resource descriptions of
// certificates.k8s.io/v1: certificatesigningrequests (with status and
// approval subresources), clustertrustbundles and podcertificaterequests
// (with status).
//
// The strategy follows upstream Kubernetes. On create the requester's
// identity (from auth.UserFrom(ctx)) replaces whatever spec.username,
// uid, groups and extra the body carried, and status starts empty. After
// create the spec never changes (main-resource updates silently keep the
// stored spec and status). Validation uses upstream's field paths and
// messages: spec.request must be a PEM "CERTIFICATE REQUEST" with a valid
// signature, usages known and unique, signerName of the form
// "example.com/name", expirationSeconds at least 600, conditions well
// formed (Approved and Denied exclusive and never removed), and
// status.certificate PEM CERTIFICATE blocks, set once.
//
// The status and approval subresources differ in what they may change:
// /status may set the certificate and non-approval conditions, /approval
// only the Approved/Denied conditions. Strategy has one ValidateStatusUpdate
// (used for /status); PrepareApprovalUpdate and ValidateApprovalUpdate
// here are the /approval counterparts for the API server to call.
//
// ClusterTrustBundles hold PEM CA certificates (validated as upstream: CA
// certificates only, no headers, no duplicates, at most 1 MiB); a bundle
// with a signerName is named "<signer with ':' for '/'>:<name>" and keeps
// its signer. PodCertificateRequests are validated as upstream on create
// (pod, service account and node references, a self-signed PKCS#10 stub
// request, maxExpirationSeconds bounds), never change their spec, and
// follow upstream's status lifecycle (one of Issued, Denied or Failed,
// then frozen; an issued chain must match the requested key and its
// validity). Nothing in plainkube issues pod certificates: the requests
// are stored for an outside signer to answer.
package certificates

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the certificates.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{certificateSigningRequests(), clusterTrustBundles(), podCertificateRequests()}
}
