package csrsigning

import (
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/api/certificates"
)

func TestPlan(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(nil, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	good := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	hour := int32(3600)
	csr := func(signer string, request []byte, usages []certificatesv1.KeyUsage, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: signer, Request: request, Usages: usages, ExpirationSeconds: &hour}}
		for _, t := range conds {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue})
		}
		return c
	}
	client := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	cas := map[string]CA{}
	for _, s := range Signers {
		if s != certificatesv1.KubeletServingSignerName {
			cas[s] = CA{}
		}
	}
	approved, denied, failed := certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed
	for _, tc := range []struct {
		name        string
		csr         *certificatesv1.CertificateSigningRequest
		sign        bool
		fail        string
		failsChecks bool
	}{
		{name: "pending", csr: csr(certificatesv1.KubeAPIServerClientSignerName, good, client)},
		{name: "denied", csr: csr(certificatesv1.KubeAPIServerClientSignerName, good, client, approved, denied)},
		{name: "failed", csr: csr(certificatesv1.KubeAPIServerClientSignerName, good, client, approved, failed)},
		{name: "another signer", csr: csr("example.com/signer", good, client, approved)},
		{name: "unparsable", csr: csr(certificatesv1.KubeAPIServerClientSignerName, []byte("junk"), client, approved),
			fail: "unable to parse csr: "},
		{name: "fails the signer's checks", csr: csr(certificatesv1.KubeAPIServerClientSignerName, good,
			[]certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}, approved),
			fail: "invalid usage for client certificate: server auth", failsChecks: true},
		{name: "client", csr: csr(certificatesv1.KubeAPIServerClientSignerName, good, client, approved), sign: true},
		{name: "legacy-unknown", csr: csr(certificates.LegacyUnknownSignerName, good, nil, approved), sign: true},
		// Without a kubelet-serving CA, such requests are not this
		// controller's: the cluster CA does not sign them.
		{name: "kubelet-serving without its CA", csr: csr(certificatesv1.KubeletServingSignerName, good, client, approved)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(tc.csr, cas, 24*time.Hour)
			if (p.Sign != nil) != tc.sign {
				t.Errorf("sign = %v, want %v", p.Sign != nil, tc.sign)
			}
			if p.Sign != nil && (p.Sign.Subject.CommonName != "alice" || p.Duration != time.Hour) {
				t.Errorf("sign %q for %v, want alice for 1h", p.Sign.Subject.CommonName, p.Duration)
			}
			if len(p.Fail) < len(tc.fail) || p.Fail[:len(tc.fail)] != tc.fail || (tc.fail == "") != (p.Fail == "") {
				t.Errorf("fail = %q, want %q…", p.Fail, tc.fail)
			}
			if p.FailsChecks != tc.failsChecks {
				t.Errorf("failsChecks = %v, want %v", p.FailsChecks, tc.failsChecks)
			}
		})
	}
}
