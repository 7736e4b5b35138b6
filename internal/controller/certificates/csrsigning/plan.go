package csrsigning

import (
	"crypto/x509"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	"plainkube.dev/plainkube/internal/api/certificates"
)

// Plan is what to do with one request: nothing, mark it failed, or sign
// it.
type Plan struct {
	// Fail, if set, is the message of the Failed condition to add.
	Fail string
	// FailsChecks: Fail is from the signer's own checks (not an
	// unparsable request).
	FailsChecks bool
	// Sign, if set, is the request to sign, for Duration.
	Sign     *x509.CertificateRequest
	Duration time.Duration
}

// plan decides one request (cas: the signers signed for; max: the longest
// certificate to issue).
func plan(csr *certificatesv1.CertificateSigningRequest, cas map[string]CA, max time.Duration) Plan {
	if !toSign(csr, cas) {
		return Plan{}
	}
	req, err := certificates.ParseRequest(csr.Spec.Request)
	if err != nil {
		return Plan{Fail: "unable to parse csr: " + err.Error()}
	}
	ours, err := Check(csr.Spec.SignerName, req, csr.Spec.Usages)
	switch {
	case !ours:
		return Plan{}
	case err != nil:
		return Plan{Fail: err.Error(), FailsChecks: true}
	}
	return Plan{Sign: req, Duration: Duration(csr.Spec.ExpirationSeconds, max)}
}
