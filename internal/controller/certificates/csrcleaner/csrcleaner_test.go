package csrcleaner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

// certPEM is a self-signed certificate valid until notAfter.
func certPEM(t *testing.T, notAfter time.Time) []byte {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestCleaner: a request issued two hours ago is deleted, a fresh one kept.
func TestCleaner(t *testing.T) {
	cfg := controllertest.StartServer(t)
	cs := controllertest.Clientset(t, cfg)
	api := cs.CertificatesV1().CertificateSigningRequests()
	ctx := context.Background()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "u"}}, key)
	for name, approvedAt := range map[string]time.Time{"old": time.Now().Add(-2 * time.Hour), "new": time.Now()} {
		csr, err := api.Create(ctx, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
				SignerName: "example.com/x", Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved,
			Status: corev1.ConditionTrue, Reason: "Test", LastUpdateTime: metav1.NewTime(approvedAt)}}
		if csr, err = api.UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		csr.Status.Certificate = certPEM(t, time.Now().Add(24*time.Hour))
		if _, err := api.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Interval = 50 * time.Millisecond
	controllertest.Run(t, c, 1)
	controllertest.Eventually(t, "the old request deleted", func() (bool, error) {
		_, err := api.Get(ctx, "old", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if _, err := api.Get(ctx, "new", metav1.GetOptions{}); err != nil {
		t.Fatalf("the fresh request: %v", err)
	}
}
