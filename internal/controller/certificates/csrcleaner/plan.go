package csrcleaner

import (
	"crypto/x509"
	"encoding/pem"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// State is what a sweep sees: every request, and the time.
type State struct {
	CSRs []*certificatesv1.CertificateSigningRequest
	Now  time.Time
}

// Plan is the requests to delete, each with why.
type Plan struct {
	Delete []expiredCSR
}

type expiredCSR struct {
	CSR *certificatesv1.CertificateSigningRequest
	Why string
}

// plan picks the requests that are done with (Expired).
func plan(st State) Plan {
	var p Plan
	for _, csr := range st.CSRs {
		if done, why := Expired(csr, st.Now); done {
			p.Delete = append(p.Delete, expiredCSR{csr, why})
		}
	}
	return p
}

// Expired reports whether csr is done with at now, and why.
func Expired(csr *certificatesv1.CertificateSigningRequest, now time.Time) (bool, string) {
	older := func(t metav1.Time, d time.Duration) bool { return !t.IsZero() && now.Sub(t.Time) > d }
	issued := len(csr.Status.Certificate) > 0
	approved, denied := false, false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
			if issued && older(c.LastUpdateTime, IssuedExpiration) {
				return true, "issued more than an hour ago"
			}
		case certificatesv1.CertificateDenied:
			denied = true
			if older(c.LastUpdateTime, DeniedExpiration) {
				return true, "denied more than an hour ago"
			}
		case certificatesv1.CertificateFailed:
			if older(c.LastUpdateTime, FailedExpiration) {
				return true, "failed more than an hour ago"
			}
		}
	}
	if !approved && !denied && older(csr.CreationTimestamp, PendingExpiration) {
		return true, "pending for more than a day"
	}
	if approved && issued {
		if block, _ := pem.Decode(csr.Status.Certificate); block != nil {
			if cert, err := x509.ParseCertificate(block.Bytes); err == nil && now.After(cert.NotAfter) {
				return true, "its certificate expired"
			}
		}
	}
	return false, ""
}
