package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"

	"plainkube.dev/plainkube/internal/auth"
)

func testRequest(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestCSRCreate(t *testing.T) {
	st := Resources()[0].Strategy
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request:    testRequest(t),
		SignerName: certificatesv1.KubeAPIServerClientSignerName,
		Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		Username:   "mallory",
	}}
	ctx := auth.WithUser(context.Background(), &auth.User{Name: "alice", Groups: []string{"devs"}})
	st.Default(csr)
	st.PrepareForCreate(ctx, csr)
	if csr.Spec.Username != "alice" || len(csr.Spec.Groups) != 1 {
		t.Errorf("requester = %q %v, want alice [devs]", csr.Spec.Username, csr.Spec.Groups)
	}
	if errs := st.Validate(csr); len(errs) != 0 {
		t.Fatalf("valid CSR rejected: %v", errs)
	}

	bad := csr.DeepCopy()
	bad.Spec.Request = []byte("not pem")
	bad.Spec.SignerName = "signer"
	bad.Spec.Usages = append(bad.Spec.Usages, "client auth", "flying")
	var got []string
	for _, e := range st.Validate(bad) {
		got = append(got, e.Error())
	}
	want := []string{
		"spec.request: Invalid value",
		"spec.usages[1]: Duplicate value",
		"spec.usages[2]: Unsupported value",
		"spec.signerName: Invalid value: \"signer\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
	}
	if len(got) != len(want) {
		t.Fatalf("errors = %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
	if f := st.SelectableFields(csr); f["spec.signerName"] != certificatesv1.KubeAPIServerClientSignerName {
		t.Errorf("selectable fields = %v", f)
	}
}

func TestCSRApprovalOnlyThroughApproval(t *testing.T) {
	st := Resources()[0].Strategy
	old := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request:    testRequest(t),
		SignerName: certificatesv1.KubeAPIServerClientSignerName,
		Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
	}}
	approved := old.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: "True"}}
	if errs := st.ValidateStatusUpdate(approved, old); len(errs) != 1 || !strings.Contains(errs[0].Detail, `may not add a condition of type "Approved"`) {
		t.Errorf("status update approving = %v", errs)
	}
	if errs := ValidateApprovalUpdate(approved, old); len(errs) != 0 {
		t.Errorf("approval update = %v", errs)
	}
}
