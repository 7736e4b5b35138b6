package csrcleaner_test

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

	"plainkube.dev/plainkube/internal/controller/certificates/csrcleaner"
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

func TestExpired(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	cond := func(ty certificatesv1.RequestConditionType, at metav1.Time) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: ty, Status: corev1.ConditionTrue, LastUpdateTime: at}
	}
	csr := func(created metav1.Time, cert []byte, conds ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created},
			Status: certificatesv1.CertificateSigningRequestStatus{Conditions: conds, Certificate: cert}}
	}
	valid, expired := certPEM(t, now.Add(24*time.Hour)), certPEM(t, now.Add(-time.Minute))
	for _, tc := range []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want bool
	}{
		{"fresh pending", csr(ago(time.Hour), nil), false},
		{"old pending", csr(ago(25*time.Hour), nil), true},
		{"recently issued", csr(ago(2*time.Hour), valid, cond(certificatesv1.CertificateApproved, ago(30*time.Minute))), false},
		{"issued long ago", csr(ago(2*time.Hour), valid, cond(certificatesv1.CertificateApproved, ago(2*time.Hour))), true},
		{"approved long ago, not issued", csr(ago(30*time.Hour), nil, cond(certificatesv1.CertificateApproved, ago(2*time.Hour))), false},
		{"issued certificate expired", csr(ago(2*time.Hour), expired, cond(certificatesv1.CertificateApproved, ago(10*time.Minute))), true},
		{"recently denied", csr(ago(2*time.Hour), nil, cond(certificatesv1.CertificateDenied, ago(10*time.Minute))), false},
		{"denied long ago", csr(ago(2*time.Hour), nil, cond(certificatesv1.CertificateDenied, ago(2*time.Hour))), true},
		{"failed long ago", csr(ago(2*time.Hour), nil, cond(certificatesv1.CertificateApproved, ago(10*time.Minute)),
			cond(certificatesv1.CertificateFailed, ago(2*time.Hour))), true},
	} {
		if got, why := csrcleaner.Expired(tc.csr, now); got != tc.want {
			t.Errorf("%s: expired %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
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
	c, err := csrcleaner.New(cfg)
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
