package csrsigning_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/controller/certificates/csrsigning"
	"plainkube.dev/plainkube/internal/controller/controllertest"
)

func newCA(t *testing.T, notAfter time.Time) csrsigning.CA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return csrsigning.CA{Cert: cert, Key: key}
}

func pemRequest(t *testing.T, tmpl *x509.CertificateRequest) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestDuration(t *testing.T) {
	sec := func(s int32) *int32 { return &s }
	max := 24 * time.Hour
	for _, tc := range []struct {
		in   *int32
		want time.Duration
	}{
		{nil, max}, {sec(3600), time.Hour}, {sec(60), 10 * time.Minute}, {sec(7 * 24 * 3600), max},
	} {
		if got := csrsigning.Duration(tc.in, max); got != tc.want {
			t.Errorf("Duration(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSignCapsAtCAExpiry(t *testing.T) {
	now := time.Now()
	ca := newCA(t, now.Add(48*time.Hour))
	block, _ := pem.Decode(pemRequest(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "u"}}))
	req, _ := x509.ParseCertificateRequest(block.Bytes)
	out, err := csrsigning.Sign(ca, req, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, 365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(out)
	cert, _ := x509.ParseCertificate(b.Bytes)
	if !cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Fatalf("NotAfter %v, want the CA's %v", cert.NotAfter, ca.Cert.NotAfter)
	}
	if _, err := csrsigning.Sign(ca, req, []certificatesv1.KeyUsage{"bogus"}, time.Hour, now); err == nil {
		t.Fatal("signed with an unknown usage")
	}
	if _, err := csrsigning.Sign(ca, req, nil, time.Hour, now.Add(72*time.Hour)); err == nil {
		t.Fatal("signed after the CA expired")
	}
}

// TestSigning runs the controller: approved requests of its signers are
// signed as asked (kubelet-serving ones by the kubelet-serving CA, the
// others by the cluster CA), others are left alone, and requests failing
// their signer's checks get a Failed condition.
func TestSigning(t *testing.T) {
	cfg := controllertest.StartServer(t)
	cs := controllertest.Clientset(t, cfg)
	ca := newCA(t, time.Now().Add(10*365*24*time.Hour))
	servingCA := newCA(t, time.Now().Add(10*365*24*time.Hour))
	if _, err := csrsigning.New(cfg, ca, &ca); err == nil {
		t.Fatal("the cluster CA was accepted as the kubelet-serving CA")
	}
	c, err := csrsigning.New(cfg, ca, &servingCA)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)
	ctx := context.Background()
	api := cs.CertificatesV1().CertificateSigningRequests()
	hour := int32(3600)
	create := func(name, signer string, tmpl *x509.CertificateRequest, approve bool, exp *int32, usages ...certificatesv1.KeyUsage) {
		t.Helper()
		csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: pemRequest(t, tmpl), SignerName: signer, Usages: usages, ExpirationSeconds: exp}}
		got, err := api.Create(ctx, csr, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if approve {
			got.Status.Conditions = append(got.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"})
			if _, err := api.UpdateApproval(ctx, name, got, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("%s: approve: %v", name, err)
			}
		}
	}
	nodes := pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
	create("serving", certificatesv1.KubeletServingSignerName, &x509.CertificateRequest{Subject: nodes, DNSNames: []string{"n1"},
		IPAddresses: []net.IP{net.ParseIP("10.0.0.5")}}, true, &hour, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)
	create("client", certificatesv1.KubeAPIServerClientKubeletSignerName, &x509.CertificateRequest{Subject: nodes}, true, nil,
		certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
	create("admin", certificatesv1.KubeAPIServerClientSignerName, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "jane", Organization: []string{"devs"}}}, true, nil,
		certificatesv1.UsageClientAuth)
	create("unapproved", certificatesv1.KubeAPIServerClientSignerName, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "joe"}}, false, nil,
		certificatesv1.UsageClientAuth)
	create("other-signer", "example.com/signer", &x509.CertificateRequest{Subject: pkix.Name{CommonName: "joe"}}, true, nil,
		certificatesv1.UsageClientAuth)
	create("bad-client", certificatesv1.KubeAPIServerClientKubeletSignerName, &x509.CertificateRequest{Subject: nodes, DNSNames: []string{"x"}}, true, nil,
		certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
	create("bad-admin", certificatesv1.KubeAPIServerClientSignerName, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "joe"}}, true, nil,
		certificatesv1.UsageServerAuth)

	cert := func(name string, ca csrsigning.CA) *x509.Certificate {
		t.Helper()
		var out *x509.Certificate
		controllertest.Eventually(t, name+" signed", func() (bool, error) {
			csr, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(csr.Status.Certificate) == 0 {
				return false, err
			}
			b, _ := pem.Decode(csr.Status.Certificate)
			out, err = x509.ParseCertificate(b.Bytes)
			return err == nil, err
		})
		if err := out.CheckSignatureFrom(ca.Cert); err != nil {
			t.Fatalf("%s: not signed by the CA: %v", name, err)
		}
		return out
	}
	s := cert("serving", servingCA)
	if s.CheckSignatureFrom(ca.Cert) == nil {
		t.Fatal("a kubelet-serving certificate was signed by the cluster CA")
	}
	if s.Subject.CommonName != "system:node:n1" || !slices.Equal(s.DNSNames, []string{"n1"}) || len(s.IPAddresses) != 1 ||
		!slices.Equal(s.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || s.KeyUsage != x509.KeyUsageDigitalSignature || s.IsCA {
		t.Fatalf("serving certificate: %+v", s)
	}
	if d := s.NotAfter.Sub(time.Now()); d > time.Hour+time.Minute || d < 58*time.Minute {
		t.Fatalf("serving certificate lasts %v more, want expirationSeconds' hour", d)
	}
	cl := cert("client", ca)
	if !slices.Equal(cl.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || cl.NotAfter.Sub(time.Now()) < 364*24*time.Hour {
		t.Fatalf("client certificate: usages %v, until %v", cl.ExtKeyUsage, cl.NotAfter)
	}
	if a := cert("admin", ca); a.Subject.CommonName != "jane" || !slices.Equal(a.Subject.Organization, []string{"devs"}) {
		t.Fatalf("admin certificate subject %v", a.Subject)
	}
	for _, name := range []string{"bad-client", "bad-admin"} {
		controllertest.Eventually(t, name+" failed", func() (bool, error) {
			csr, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range csr.Status.Conditions {
				if c.Type == certificatesv1.CertificateFailed && c.Reason == "SignerValidationFailure" {
					return len(csr.Status.Certificate) == 0, nil
				}
			}
			return false, nil
		})
	}
	for _, name := range []string{"unapproved", "other-signer"} {
		csr, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(csr.Status.Certificate) > 0 || len(csr.Status.Conditions) > 1 {
			t.Fatalf("%s was acted on: %+v", name, csr.Status)
		}
	}
}
