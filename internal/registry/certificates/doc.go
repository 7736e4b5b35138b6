// Package certificates supplies the registry.Resource description of
// certificates.k8s.io/v1 certificatesigningrequests, with its status and
// approval subresources.
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
package certificates

import "plainkube.dev/plainkube/internal/registry"

// Resources returns the certificates.k8s.io resources.
func Resources() []registry.Resource {
	return []registry.Resource{certificateSigningRequests()}
}
