package certificates

import (
	"context"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
	apicertificates "plainkube.dev/plainkube/internal/api/certificates"
	"plainkube.dev/plainkube/internal/auth"
)

// The plugins' names, as upstream's.
const (
	ApprovalName           = "CertificateApproval"
	SigningName            = "CertificateSigning"
	SubjectRestrictionName = "CertificateSubjectRestriction"
)

var csrs = schema.GroupResource{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests"}

// Approval is CertificateApproval: an update of a request's /approval
// (an approval or a denial) needs approve on the request's signer.
func Approval(authz auth.Authorizer) admission.Plugin {
	return admission.Plugin{Name: ApprovalName, Resources: []schema.GroupResource{csrs}, Operations: []admission.Operation{admission.Update},
		Subresources: []string{"approval"},
		Validate: func(ctx context.Context, a *admission.Attributes) error {
			if a.Subresource != "approval" {
				return nil
			}
			old, ok := a.OldObject.(*certificatesv1.CertificateSigningRequest)
			if !ok {
				return admission.Forbiddenf(a, "expected type CertificateSigningRequest, got: %T", a.OldObject)
			}
			if !allowedForSigner(ctx, authz, a.User, "approve", old.Spec.SignerName) {
				return admission.Forbiddenf(a, "user not permitted to approve requests with signerName %q", old.Spec.SignerName)
			}
			return nil
		}}
}

// Signing is CertificateSigning: an update of a request's /status that
// changes its certificate or conditions needs sign on its signer.
func Signing(authz auth.Authorizer) admission.Plugin {
	return admission.Plugin{Name: SigningName, Resources: []schema.GroupResource{csrs}, Operations: []admission.Operation{admission.Update},
		Subresources: []string{"status"},
		Validate: func(ctx context.Context, a *admission.Attributes) error {
			if a.Subresource != "status" {
				return nil
			}
			old, ok := a.OldObject.(*certificatesv1.CertificateSigningRequest)
			if !ok {
				return admission.Forbiddenf(a, "expected type CertificateSigningRequest, got: %T", a.OldObject)
			}
			csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
			if !ok {
				return admission.Forbiddenf(a, "expected type CertificateSigningRequest, got: %T", a.Object)
			}
			if slices.Equal(old.Status.Certificate, csr.Status.Certificate) && apiequality.Semantic.DeepEqual(old.Status.Conditions, csr.Status.Conditions) {
				return nil
			}
			if !allowedForSigner(ctx, authz, a.User, "sign", old.Spec.SignerName) {
				return admission.Forbiddenf(a, "user not permitted to sign requests with signerName %q", old.Spec.SignerName)
			}
			return nil
		}}
}

// SubjectRestriction is CertificateSubjectRestriction: a new request for
// the kube-apiserver-client signer may not name the system:masters group
// as an organization.
func SubjectRestriction() admission.Plugin {
	return admission.Plugin{Name: SubjectRestrictionName, Resources: []schema.GroupResource{csrs}, Operations: []admission.Operation{admission.Create},
		Validate: func(_ context.Context, a *admission.Attributes) error {
			csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
			if !ok {
				return admission.Forbiddenf(a, "expected type CertificateSigningRequest, got: %T", a.Object)
			}
			if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
				return nil
			}
			req, err := apicertificates.ParseRequest(csr.Spec.Request)
			if err != nil {
				return admission.Forbiddenf(a, "failed to parse CSR: %v", err)
			}
			if slices.Contains(req.Subject.Organization, auth.GroupMasters) {
				return admission.Forbiddenf(a, "use of %s signer with system:masters group is not allowed", certificatesv1.KubeAPIServerClientSignerName)
			}
			return nil
		}}
}

// allowedForSigner asks whether u may verb the signer: by its own name,
// else by its domain's wildcard "<domain>/*".
func allowedForSigner(ctx context.Context, authz auth.Authorizer, u *auth.User, verb, signer string) bool {
	if u == nil {
		// A write made in-process with no identity: the server's own.
		return true
	}
	domain, _, _ := strings.Cut(signer, "/")
	for _, name := range []string{signer, domain + "/*"} {
		d, _, err := authz.Authorize(ctx, auth.Attributes{User: u, Verb: verb, IsResource: true, APIGroup: certificatesv1.GroupName,
			APIVersion: "*", Resource: "signers", Name: name})
		if err == nil && d == auth.Allow {
			return true
		}
	}
	return false
}
