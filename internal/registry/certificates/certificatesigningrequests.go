package certificates

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apicertificates "plainkube.dev/plainkube/internal/api/certificates"
	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry"
)

// legacyUnknownSignerName is the v1beta1-era signer, refused in v1.
const legacyUnknownSignerName = "kubernetes.io/legacy-unknown"

func certificateSigningRequests() registry.Resource {
	return registry.Resource{
		Kind:         certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"),
		Plural:       "certificatesigningrequests",
		Singular:     "certificatesigningrequest",
		ShortNames:   []string{"csr"},
		Subresources: []string{"status", "approval"},
		// approval changes what /status may (status.conditions included).
		Parts: map[string]registry.Part{"approval": {}},
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultConditions(obj.(*certificatesv1.CertificateSigningRequest)) },
			PrepareForCreate: func(ctx context.Context, obj runtime.Object) {
				prepareForCreate(ctx, obj.(*certificatesv1.CertificateSigningRequest))
			},
			PrepareForUpdate: func(_ context.Context, obj, old runtime.Object) {
				csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
				// Only metadata changes through the main resource.
				csr.Spec = o.Spec
				csr.Status = o.Status
			},
			// Any name that is a valid path segment: upstream places no
			// rule of its own on CSR names.
			ValidateName: func(name string, _ bool) []string { return path.IsValidPathSegmentName(name) },
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateCSR(obj.(*certificatesv1.CertificateSigningRequest), options(nil))
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
				opts := options(o)
				opts.allowSettingCertificate = true
				return validateCSRUpdate(csr, o, opts)
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				return fields.Set{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
			},
		},
	}
}

// defaultConditions applies the v1 default: a condition's status is True
// unless given.
func defaultConditions(csr *certificatesv1.CertificateSigningRequest) {
	for i := range csr.Status.Conditions {
		if csr.Status.Conditions[i].Status == "" {
			csr.Status.Conditions[i].Status = corev1.ConditionTrue
		}
	}
}

// prepareForCreate records who asks: the requester fields come from the
// authenticated user, never from the body. Nobody creates a pre-approved
// request.
func prepareForCreate(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) {
	csr.Spec.Username = ""
	csr.Spec.UID = ""
	csr.Spec.Groups = nil
	csr.Spec.Extra = nil
	if u := auth.UserFrom(ctx); u != nil {
		csr.Spec.Username = u.Name
		csr.Spec.UID = u.UID
		csr.Spec.Groups = append([]string(nil), u.Groups...)
		if len(u.Extra) > 0 {
			csr.Spec.Extra = make(map[string]certificatesv1.ExtraValue, len(u.Extra))
			for k, v := range u.Extra {
				csr.Spec.Extra[k] = append(certificatesv1.ExtraValue(nil), v...)
			}
		}
	}
	csr.Status = certificatesv1.CertificateSigningRequestStatus{}
}

// PrepareApprovalUpdate is the /approval counterpart of PrepareForUpdate:
// of the body it keeps only status.conditions, filling their timestamps
// with now where unset.
func PrepareApprovalUpdate(obj, old runtime.Object, now time.Time) {
	csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	conditions := csr.Status.Conditions
	csr.Spec = o.Spec
	csr.Status = *o.Status.DeepCopy()
	csr.Status.Conditions = conditions
	defaultConditions(csr)
	PopulateConditionTimestamps(csr, o, now)
}

// ValidateApprovalUpdate is the /approval counterpart of
// ValidateStatusUpdate: Approved/Denied conditions may be added, the
// certificate may not be set.
func ValidateApprovalUpdate(obj, old runtime.Object) field.ErrorList {
	csr, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	opts := options(o)
	opts.allowSettingApprovalConditions = true
	return validateCSRUpdate(csr, o, opts)
}

// PopulateConditionTimestamps sets lastUpdateTime of conditions that lack
// one to now, and lastTransitionTime to the old condition's when the
// status did not change, else to now.
func PopulateConditionTimestamps(csr, old *certificatesv1.CertificateSigningRequest, now time.Time) {
	t := metav1.NewTime(now)
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = t
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = t
		if old == nil {
			continue
		}
		for _, oc := range old.Status.Conditions {
			if oc.Type == c.Type && oc.Status == c.Status && !oc.LastTransitionTime.IsZero() {
				c.LastTransitionTime = oc.LastTransitionTime
				break
			}
		}
	}
}

// validationOptions mirror upstream's: what an update path may change,
// and which already-stored irregularities are tolerated.
type validationOptions struct {
	allowSettingApprovalConditions bool
	allowSettingCertificate        bool
	allowBothApprovedAndDenied     bool
	allowLegacySignerName          bool
	allowDuplicateConditionTypes   bool
	allowEmptyConditionType        bool
	allowArbitraryCertificate      bool
	allowUnknownUsages             bool
	allowDuplicateUsages           bool
}

// options tolerates in an update what the stored object already has.
func options(old *certificatesv1.CertificateSigningRequest) validationOptions {
	if old == nil {
		return validationOptions{}
	}
	o := validationOptions{allowLegacySignerName: old.Spec.SignerName == legacyUnknownSignerName}
	approved, denied := false, false
	seen := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range old.Status.Conditions {
		approved = approved || c.Type == certificatesv1.CertificateApproved
		denied = denied || c.Type == certificatesv1.CertificateDenied
		o.allowDuplicateConditionTypes = o.allowDuplicateConditionTypes || seen[c.Type]
		o.allowEmptyConditionType = o.allowEmptyConditionType || c.Type == ""
		seen[c.Type] = true
	}
	o.allowBothApprovedAndDenied = approved && denied
	o.allowArbitraryCertificate = validateCertificate(old.Status.Certificate) != nil
	usages := map[certificatesv1.KeyUsage]bool{}
	for _, u := range old.Spec.Usages {
		o.allowUnknownUsages = o.allowUnknownUsages || !validUsages[u]
		o.allowDuplicateUsages = o.allowDuplicateUsages || usages[u]
		usages[u] = true
	}
	return o
}

var validUsages = map[certificatesv1.KeyUsage]bool{}

var validUsageList = []string{
	"any", "cert sign", "client auth", "code signing", "content commitment", "crl sign",
	"data encipherment", "decipher only", "digital signature", "email protection",
	"encipher only", "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement",
	"key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime",
	"server auth", "signing", "timestamping",
}

func init() {
	for _, u := range validUsageList {
		validUsages[certificatesv1.KeyUsage(u)] = true
	}
}

func validateCSR(csr *certificatesv1.CertificateSigningRequest, opts validationOptions) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if err := checkRequest(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(sp.Child("request"), csr.Spec.Request, err.Error()))
	}
	up := sp.Child("usages")
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(up, ""))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range csr.Spec.Usages {
		if !opts.allowUnknownUsages && !validUsages[u] {
			errs = append(errs, field.NotSupported(up.Index(i), u, validUsageList))
		}
		if !opts.allowDuplicateUsages && seen[u] {
			errs = append(errs, field.Duplicate(up.Index(i), u))
		}
		seen[u] = true
	}
	snp := sp.Child("signerName")
	if !opts.allowLegacySignerName && csr.Spec.SignerName == legacyUnknownSignerName {
		errs = append(errs, field.Invalid(snp, csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, apicertificates.ValidateSignerName(snp, csr.Spec.SignerName)...)
	}
	if e := csr.Spec.ExpirationSeconds; e != nil && *e < 600 {
		errs = append(errs, field.Invalid(sp.Child("expirationSeconds"), *e, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateConditions(field.NewPath("status", "conditions"), csr, opts)...)
	if !opts.allowArbitraryCertificate {
		if err := validateCertificate(csr.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	return errs
}

// checkRequest parses the PEM PKCS#10 request and checks its signature.
func checkRequest(pemBytes []byte) error {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

// validateCertificate accepts an empty certificate or one or more PEM
// CERTIFICATE blocks without headers.
func validateCertificate(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

var (
	trueOnly        = []string{string(corev1.ConditionTrue)}
	allStatusValues = []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
)

func validateConditions(p *field.Path, csr *certificatesv1.CertificateSigningRequest, opts validationOptions) field.ErrorList {
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	approved, denied := false, false
	for i, c := range csr.Status.Conditions {
		ip := p.Index(i)
		if !opts.allowEmptyConditionType && c.Type == "" {
			errs = append(errs, field.Required(ip.Child("type"), ""))
		}
		allowed := allStatusValues
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			allowed = trueOnly
		}
		switch {
		case c.Status == "":
			errs = append(errs, field.Required(ip.Child("status"), ""))
		case !contains(allowed, string(c.Status)):
			errs = append(errs, field.NotSupported(ip.Child("status"), c.Status, allowed))
		}
		if !opts.allowBothApprovedAndDenied {
			switch c.Type {
			case certificatesv1.CertificateApproved:
				approved = true
				if denied {
					errs = append(errs, field.Invalid(ip.Child("type"), c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			case certificatesv1.CertificateDenied:
				denied = true
				if approved {
					errs = append(errs, field.Invalid(ip.Child("type"), c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			}
		}
		if !opts.allowDuplicateConditionTypes {
			if seen[c.Type] {
				errs = append(errs, field.Duplicate(ip.Child("type"), c.Type))
			}
			seen[c.Type] = true
		}
	}
	return errs
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

var approvalTypes = []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied}

// validateCSRUpdate checks a /status or /approval update.
func validateCSRUpdate(csr, old *certificatesv1.CertificateSigningRequest, opts validationOptions) field.ErrorList {
	errs := validateCSR(csr, opts)
	cp := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(findConditions(csr, t)) < len(findConditions(old, t)) {
			errs = append(errs, field.Forbidden(cp, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !opts.allowSettingApprovalConditions {
		for _, t := range approvalTypes {
			oldC, newC := findConditions(old, t), findConditions(csr, t)
			switch {
			case len(newC) < len(oldC):
				// reported above
			case len(newC) > len(oldC):
				errs = append(errs, field.Forbidden(cp, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !equality.Semantic.DeepEqual(oldC, newC):
				errs = append(errs, field.Forbidden(cp, fmt.Sprintf("updates may not modify a condition of type %q", t)))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		cert := field.NewPath("status", "certificate")
		if !opts.allowSettingCertificate {
			errs = append(errs, field.Forbidden(cert, "updates may not set certificate content"))
		} else if len(old.Status.Certificate) > 0 {
			errs = append(errs, field.Forbidden(cert, "updates may not modify existing certificate content"))
		}
	}
	return errs
}

func findConditions(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}
