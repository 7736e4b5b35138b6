package certificates

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	apicertificates "plainkube.dev/plainkube/internal/api/certificates"
	"plainkube.dev/plainkube/internal/registry"
)

// Upstream's limits on a PodCertificateRequest.
const (
	maxStubPKCS10RequestSize = 10 * 1024
	maxCertificateChainSize  = 100 * 1024
	// defaultMaxExpirationSeconds is the API's default for
	// spec.maxExpirationSeconds (a day).
	defaultMaxExpirationSeconds = 24 * 60 * 60
)

var (
	pcrConditionTypes = []string{certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed}

	stubRequestPath    = field.NewPath("spec", "stubPKCS10Request")
	certChainPath      = field.NewPath("status", "certificateChain")
	notBeforePath      = field.NewPath("status", "notBefore")
	notAfterPath       = field.NewPath("status", "notAfter")
	beginRefreshAtPath = field.NewPath("status", "beginRefreshAt")
)

func podCertificateRequests() registry.Resource {
	return registry.Resource{
		Kind:         certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"),
		Plural:       "podcertificaterequests",
		Singular:     "podcertificaterequest",
		Namespaced:   true,
		Subresources: []string{"status"},
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				s := &obj.(*certificatesv1.PodCertificateRequest).Spec
				if s.MaxExpirationSeconds == nil {
					s.MaxExpirationSeconds = ptr.To[int32](defaultMaxExpirationSeconds)
				}
			},
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*certificatesv1.PodCertificateRequest).Status = certificatesv1.PodCertificateRequestStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validatePCR(obj.(*certificatesv1.PodCertificateRequest))
			},
			// After create only metadata changes through the main
			// resource; the spec never does.
			ValidateUpdateOnly: true,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				pcr, o := obj.(*certificatesv1.PodCertificateRequest), old.(*certificatesv1.PodCertificateRequest)
				return apivalidation.ValidateImmutableField(pcr.Spec, o.Spec, field.NewPath("spec"))
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validatePCRStatusUpdate(obj.(*certificatesv1.PodCertificateRequest), old.(*certificatesv1.PodCertificateRequest), time.Now())
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				s := &obj.(*certificatesv1.PodCertificateRequest).Spec
				return fields.Set{"spec.signerName": s.SignerName, "spec.podName": s.PodName, "spec.nodeName": string(s.NodeName)}
			},
		},
	}
}

func validatePCR(pcr *certificatesv1.PodCertificateRequest) field.ErrorList {
	sp := field.NewPath("spec")
	s := &pcr.Spec
	errs := apicertificates.ValidateSignerName(sp.Child("signerName"), s.SignerName)
	if s.UnverifiedUserAnnotations != nil {
		errs = append(errs, apicertificates.ValidateUserAnnotations(s.UnverifiedUserAnnotations, sp.Child("unverifiedUserAnnotations"))...)
	}
	named := func(name, value string) {
		for _, msg := range apivalidation.NameIsDNSSubdomain(value, false) {
			errs = append(errs, field.Invalid(sp.Child(name), value, msg))
		}
	}
	uid := func(name, value string) {
		if value == "" {
			errs = append(errs, field.Invalid(sp.Child(name), value, "must not be empty"))
		}
		if len(value) > 128 {
			errs = append(errs, field.TooLong(sp.Child(name), value, 128))
		}
	}
	named("podName", s.PodName)
	uid("podUID", string(s.PodUID))
	named("serviceAccountName", s.ServiceAccountName)
	uid("serviceAccountUID", string(s.ServiceAccountUID))
	named("nodeName", string(s.NodeName))
	uid("nodeUID", string(s.NodeUID))

	mp := sp.Child("maxExpirationSeconds")
	if s.MaxExpirationSeconds == nil {
		return append(errs, field.Required(mp, "must be set"))
	}
	upper := apicertificates.MaxMaxExpirationSeconds
	if apicertificates.IsKubernetesSigner(s.SignerName) {
		upper = apicertificates.KubernetesMaxMaxExpirationSeconds
	}
	if e := int(*s.MaxExpirationSeconds); e < apicertificates.MinMaxExpirationSeconds || e > upper {
		errs = append(errs, field.Invalid(mp, s.MaxExpirationSeconds, fmt.Sprintf("must be in the range [%d, %d]", apicertificates.MinMaxExpirationSeconds, upper)))
	}
	// v1 carries only the stub request; upstream's other form
	// (pkixPublicKey with proofOfPossession) exists only in v1beta1, so
	// here the request is either set or missing.
	if len(s.StubPKCS10Request) == 0 {
		return append(errs, field.Invalid(sp, field.OmitValueType{}, "exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set"))
	}
	return append(errs, validateStubRequest(s.StubPKCS10Request)...)
}

// validateStubRequest: a DER PKCS#10 request of at most 10 KiB, with an
// Ed25519, ECDSA (P-256, P-384, P-521) or RSA (3072 or 4096 bits) key,
// correctly self-signed. Its other contents are the signer's business.
func validateStubRequest(der []byte) field.ErrorList {
	if len(der) > maxStubPKCS10RequestSize {
		return field.ErrorList{field.TooLong(stubRequestPath, der, maxStubPKCS10RequestSize)}
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return field.ErrorList{field.Invalid(stubRequestPath, field.OmitValueType{}, "must be a valid PKCS#10 CSR")}
	}
	switch pub := req.PublicKey.(type) {
	case ed25519.PublicKey:
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() && pub.Curve != elliptic.P384() && pub.Curve != elliptic.P521() {
			return field.ErrorList{field.Invalid(stubRequestPath, "curve "+pub.Curve.Params().Name, "elliptic public keys must use curve P256, P384, or P521")}
		}
	case *rsa.PublicKey:
		if bits := pub.Size() * 8; bits != 3072 && bits != 4096 {
			return field.ErrorList{field.Invalid(stubRequestPath, fmt.Sprintf("%d-bit modulus", bits), "RSA keys must have modulus size 3072 or 4096")}
		}
	default:
		return field.ErrorList{field.Invalid(stubRequestPath, field.OmitValueType{}, "unknown public key type; supported types are Ed25519, ECDSA, and RSA")}
	}
	if err := req.CheckSignature(); err != nil {
		return field.ErrorList{field.Invalid(stubRequestPath, field.OmitValueType{}, "invalid signature")}
	}
	return nil
}

// validatePCRStatusUpdate is upstream's status lifecycle: at most one of
// the conditions Issued, Denied and Failed, each True; once one is set
// the status is frozen; a denial or failure carries nothing but
// conditions; an issuance carries a certificate chain whose leaf holds
// the requested key, with notBefore, notAfter and beginRefreshAt
// consistent with it (and notBefore within 5 minutes of now); before any
// of them the status does not change.
func validatePCRStatusUpdate(pcr, old *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	var errs field.ErrorList
	cp := field.NewPath("status", "conditions")
	known := 0
	for i, c := range pcr.Status.Conditions {
		// Upstream's paths name the index as a child ("conditions.[0]").
		ip := cp.Child(fmt.Sprintf("[%d]", i))
		if !slices.Contains(pcrConditionTypes, c.Type) {
			errs = append(errs, field.NotSupported(ip.Child("type"), c.Type, pcrConditionTypes))
			continue
		}
		if known++; known > 1 {
			errs = append(errs, field.Invalid(ip.Child("type"), c.Type, `There may be at most one condition with type "Issued", "Denied", or "Failed"`))
		}
		if c.Status != metav1.ConditionTrue {
			errs = append(errs, field.NotSupported(ip.Child("status"), c.Status, []metav1.ConditionStatus{metav1.ConditionTrue}))
		}
	}
	errs = append(errs, metav1validation.ValidateConditions(pcr.Status.Conditions, cp)...)
	if len(errs) > 0 {
		return errs
	}
	sp := field.NewPath("status")
	unchanged := func(want certificatesv1.PodCertificateRequestStatus, detail string) field.ErrorList {
		if equality.Semantic.DeepEqual(pcr.Status, want) {
			return nil
		}
		return field.ErrorList{field.Invalid(sp, field.OmitValueType{}, detail)}
	}
	if pcrHas(old, certificatesv1.PodCertificateRequestConditionTypeIssued) || pcrHas(old, certificatesv1.PodCertificateRequestConditionTypeDenied) ||
		pcrHas(old, certificatesv1.PodCertificateRequestConditionTypeFailed) {
		return unchanged(old.Status, "immutable after PodCertificateRequest is issued, denied, or failed")
	}
	if pcrHas(pcr, certificatesv1.PodCertificateRequestConditionTypeDenied) || pcrHas(pcr, certificatesv1.PodCertificateRequestConditionTypeFailed) {
		return unchanged(certificatesv1.PodCertificateRequestStatus{Conditions: pcr.Status.Conditions},
			"non-condition status fields must be empty when denying or failing the PodCertificateRequest")
	}
	if pcrHas(pcr, certificatesv1.PodCertificateRequestConditionTypeIssued) {
		return validateIssuance(pcr, old, now)
	}
	return unchanged(old.Status, `status is immutable unless transitioning to "Issued", "Denied", or "Failed"`)
}

func pcrHas(pcr *certificatesv1.PodCertificateRequest, conditionType string) bool {
	for _, c := range pcr.Status.Conditions {
		if c.Type == conditionType && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// validateIssuance checks the status of a request being issued.
func validateIssuance(pcr, old *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	st := &pcr.Status
	chain := st.CertificateChain
	one := func(p *field.Path, value interface{}, detail string) field.ErrorList {
		return field.ErrorList{field.Invalid(p, value, detail)}
	}
	if len(chain) > maxCertificateChainSize {
		return field.ErrorList{field.TooLong(certChainPath, chain, maxCertificateChainSize)}
	}
	leafBlock, rest := pem.Decode([]byte(chain))
	if leafBlock == nil {
		return one(certChainPath, chain, "issued certificate chain must contain at least one certificate")
	}
	if leafBlock.Type != "CERTIFICATE" {
		return one(certChainPath, chain, "issued certificate chain must consist entirely of CERTIFICATE PEM blocks")
	}
	leaf, err := x509.ParseCertificate(leafBlock.Bytes)
	if err != nil {
		return one(certChainPath, chain, "leaf certificate does not parse as valid X.509")
	}
	var errs field.ErrorList
	for _, name := range leaf.DNSNames {
		if name == "" {
			errs = append(errs, field.Invalid(certChainPath, name, "leaf certificate should not contain empty DNSName"))
		}
		if strings.Contains(name, "..") {
			errs = append(errs, field.Invalid(certChainPath, name, "leaf certificate's DNSName should not contain '..'"))
		}
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
			errs = append(errs, field.Invalid(certChainPath, name, "leaf certificate's DNSName should not start or end with '.'"))
		}
	}
	for _, addr := range leaf.EmailAddresses {
		if _, err := mail.ParseAddress(addr); err != nil {
			errs = append(errs, field.Invalid(certChainPath, addr, "leaf certificate should not contain invalid EmailAddress"))
		}
	}
	req, err := x509.ParseCertificateRequest(old.Spec.StubPKCS10Request)
	if err != nil {
		return append(errs, field.Invalid(stubRequestPath, field.OmitValueType{}, "must be a valid PKCS#10 CSR"))
	}
	if want, ok := req.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); ok && !want.Equal(leaf.PublicKey) {
		return append(errs, field.Invalid(certChainPath, chain, "leaf certificate was not issued to the requested public key"))
	}
	if st.NotBefore == nil {
		errs = append(errs, field.Required(notBeforePath, "must be present and consistent with the issued certificate"))
	}
	if st.NotAfter == nil {
		errs = append(errs, field.Required(notAfterPath, "must be present and consistent with the issued certificate"))
	}
	if st.BeginRefreshAt == nil {
		errs = append(errs, field.Required(beginRefreshAtPath, "must be present and in the range [notbefore+10min, notafter-10min]"))
	}
	if len(errs) > 0 {
		return errs
	}
	notBefore, notAfter, refresh := st.NotBefore.Time, st.NotAfter.Time, st.BeginRefreshAt.Time
	switch lifetime := leaf.NotAfter.Sub(leaf.NotBefore); {
	case !notBefore.Equal(leaf.NotBefore):
		return one(notBeforePath, notBefore, "must be set to the NotBefore time encoded in the leaf certificate")
	case !notBefore.After(now.Add(-5*time.Minute)) || !notBefore.Before(now.Add(5*time.Minute)):
		return one(notBeforePath, notBefore, "must be set to within 5 minutes of kube-apiserver's current time")
	case !notAfter.Equal(leaf.NotAfter):
		return one(notAfterPath, notAfter, "must be set to the NotAfter time encoded in the leaf certificate")
	case lifetime < time.Hour:
		return one(certChainPath, lifetime, "leaf certificate lifetime must be >= 1 hour")
	case lifetime > time.Duration(*pcr.Spec.MaxExpirationSeconds)*time.Second:
		return one(certChainPath, lifetime, fmt.Sprintf("leaf certificate lifetime must be <= spec.maxExpirationSeconds (%v)", *pcr.Spec.MaxExpirationSeconds))
	case refresh.Before(notBefore.Add(10 * time.Minute)):
		return one(beginRefreshAtPath, refresh, "must be at least 10 minutes after status.notBefore")
	case refresh.After(notAfter.Add(-10 * time.Minute)):
		return one(beginRefreshAtPath, refresh, "must be at least 10 minutes before status.notAfter")
	}
	// The rest of the chain: certificates, not verified as a chain.
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return nil
		}
		if block.Type != "CERTIFICATE" {
			// "CERTFICATE" (sic) is upstream's message.
			return one(certChainPath, chain, "issued certificate chain must consist entirely of CERTFICATE PEM blocks")
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return one(certChainPath, chain, "intermediate certificate does not parse as valid X.509")
		}
	}
}
