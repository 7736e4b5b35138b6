package certificates

import (
	"context"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/admission"
	apicertificates "plainkube.dev/plainkube/internal/api/certificates"
	"plainkube.dev/plainkube/internal/auth"
)

// The plugins' names, as upstream's.
const (
	ApprovalName           = "CertificateApproval"
	SigningName            = "CertificateSigning"
	SubjectRestrictionName = "CertificateSubjectRestriction"
	AttestName             = "ClusterTrustBundleAttest"
	// PodCertificateSigningName is not an upstream plugin: upstream makes
	// this check in the PodCertificateRequest status strategy.
	PodCertificateSigningName = "PodCertificateRequestSigning"
)

var (
	csrs = schema.GroupResource{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests"}
	ctbs = schema.GroupResource{Group: certificatesv1.GroupName, Resource: "clustertrustbundles"}
	pcrs = schema.GroupResource{Group: certificatesv1.GroupName, Resource: "podcertificaterequests"}
)

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

// Attest is ClusterTrustBundleAttest: creating or changing a bundle that
// names a signer needs attest on that signer. An update that changes
// only what the garbage collector writes (owner references, finalizers)
// needs nothing.
func Attest(authz auth.Authorizer) admission.Plugin {
	return admission.Plugin{Name: AttestName, Resources: []schema.GroupResource{ctbs}, Operations: []admission.Operation{admission.Create, admission.Update},
		Validate: func(ctx context.Context, a *admission.Attributes) error {
			ctb, ok := a.Object.(*certificatesv1.ClusterTrustBundle)
			if !ok {
				return admission.Forbiddenf(a, "expected type ClusterTrustBundle, got: %T", a.OldObject)
			}
			if ctb.Spec.SignerName == "" {
				return nil
			}
			if old, ok := a.OldObject.(*certificatesv1.ClusterTrustBundle); ok && a.Operation == admission.Update && onlyGCFieldsChange(ctb, old) {
				return nil
			}
			if !allowedForSigner(ctx, authz, a.User, "attest", ctb.Spec.SignerName) {
				return admission.Forbiddenf(a, "user not permitted to attest for signerName %q", ctb.Spec.SignerName)
			}
			return nil
		}}
}

// onlyGCFieldsChange: ctb is old but for owner references, finalizers and
// the fields the server sets on every write.
func onlyGCFieldsChange(ctb, old *certificatesv1.ClusterTrustBundle) bool {
	c := ctb.DeepCopy()
	c.OwnerReferences = old.OwnerReferences
	c.Finalizers = old.Finalizers
	c.SelfLink = old.SelfLink
	c.ManagedFields = old.ManagedFields
	c.ResourceVersion = old.ResourceVersion
	return apiequality.Semantic.DeepEqual(c, old)
}

// PodCertificateSigning is upstream's status strategy check on
// PodCertificateRequests: a /status update that changes the status needs
// sign on the request's signer. It answers as upstream does, 422 on
// spec.signerName.
func PodCertificateSigning(authz auth.Authorizer) admission.Plugin {
	return admission.Plugin{Name: PodCertificateSigningName, Resources: []schema.GroupResource{pcrs}, Operations: []admission.Operation{admission.Update},
		Subresources: []string{"status"},
		Validate: func(ctx context.Context, a *admission.Attributes) error {
			if a.Subresource != "status" {
				return nil
			}
			old, ok := a.OldObject.(*certificatesv1.PodCertificateRequest)
			if !ok {
				return admission.Forbiddenf(a, "expected type PodCertificateRequest, got: %T", a.OldObject)
			}
			pcr, ok := a.Object.(*certificatesv1.PodCertificateRequest)
			if !ok {
				return admission.Forbiddenf(a, "expected type PodCertificateRequest, got: %T", a.Object)
			}
			if apiequality.Semantic.DeepEqual(old.Status, pcr.Status) || allowedForSigner(ctx, authz, a.User, "sign", old.Spec.SignerName) {
				return nil
			}
			return apierrors.NewInvalid(certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest").GroupKind(), a.Name, field.ErrorList{
				field.Forbidden(field.NewPath("spec", "signerName"), fmt.Sprintf("User %q is not permitted to \"sign\" for signer %q", a.User.Name, old.Spec.SignerName)),
			})
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
