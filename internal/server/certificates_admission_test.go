package server

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
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func csrRequest(t *testing.T, name, signer string, orgs ...string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "someone", Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.CertificateSigningRequestSpec{
		Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: signer,
		Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}}
}

func impersonating(t *testing.T, cfg *rest.Config, user string, groups ...string) kubernetes.Interface {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return clientset(t, c)
}

// TestCertificateAdmission: approving a request needs approve on its
// signer (by name or "<domain>/*"), changing its status conditions needs
// sign, and no kube-apiserver-client request may ask for system:masters —
// with upstream's messages; the certificate controller's account may
// decide the node requests it handles.
func TestCertificateAdmission(t *testing.T) {
	_, cfg := startServer(t)
	admin := clientset(t, cfg)
	ctx := context.Background()
	const signer = "example.com/one"

	grant := func(name string, rules ...rbacv1.PolicyRule) { t.Helper(); grantAlice(t, admin, name, rules...) }
	grant("csr-writer", rbacv1.PolicyRule{Verbs: []string{"get", "update"}, APIGroups: []string{certificatesv1.GroupName},
		Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"}})
	alice := impersonating(t, cfg, "alice")
	csrs := alice.CertificatesV1().CertificateSigningRequests()

	if _, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, csrRequest(t, "req", signer), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// retry runs f until it is not refused for want of RBAC rules the
	// authorizer may not have seen yet, or the time is up.
	retry := func(f func() error) error {
		var err error
		_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			err = f()
			return !apierrors.IsForbidden(err), nil
		})
		return err
	}
	approve := func() error {
		csr, err := csrs.Get(ctx, "req", metav1.GetOptions{})
		if err != nil {
			return err
		}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"}}
		_, err = csrs.UpdateApproval(ctx, "req", csr, metav1.UpdateOptions{})
		return err
	}
	var err error
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		err = approve()
		// Until the authorizer has seen alice's binding and role, the get
		// itself is refused (with or without an "RBAC: ... not found" tail).
		return err != nil && apierrors.IsForbidden(err) && !strings.Contains(err.Error(), `User "alice" cannot get resource "certificatesigningrequests"`), nil
	})
	want := `certificatesigningrequests.certificates.k8s.io "req" is forbidden: user not permitted to approve requests with signerName "example.com/one"`
	if err == nil || err.Error() != want {
		t.Fatalf("approval without approve on the signer: %v, want %q", err, want)
	}
	grant("csr-approver", rbacv1.PolicyRule{Verbs: []string{"approve"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"}})
	if err := retry(approve); err != nil {
		t.Fatalf("approval with approve on example.com/*: %v", err)
	}

	fail := func() error {
		csr, err := csrs.Get(ctx, "req", metav1.GetOptions{})
		if err != nil {
			return err
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "Test"})
		_, err = csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{})
		return err
	}
	want = `certificatesigningrequests.certificates.k8s.io "req" is forbidden: user not permitted to sign requests with signerName "example.com/one"`
	if err := fail(); err == nil || err.Error() != want {
		t.Fatalf("status change without sign on the signer: %v, want %q", err, want)
	}
	grant("csr-signer", rbacv1.PolicyRule{Verbs: []string{"sign"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"signers"}, ResourceNames: []string{signer}})
	if err := retry(fail); err != nil {
		t.Fatalf("status change with sign on the signer: %v", err)
	}

	_, err = admin.CertificatesV1().CertificateSigningRequests().Create(ctx, csrRequest(t, "masters", certificatesv1.KubeAPIServerClientSignerName, "system:masters"), metav1.CreateOptions{})
	want = `certificatesigningrequests.certificates.k8s.io "masters" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`
	if err == nil || err.Error() != want {
		t.Fatalf("a system:masters client request: %v, want %q", err, want)
	}

	// The certificate controller decides node serving requests (plainkube's
	// approver does, upstream's does not): its account may approve them.
	if _, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, csrRequest(t, "serving", certificatesv1.KubeletServingSignerName, "system:nodes"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controller := impersonating(t, cfg, "system:serviceaccount:kube-system:certificate-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
	csr, err := controller.CertificatesV1().CertificateSigningRequests().Get(ctx, "serving", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "Test"}}
	if _, err := controller.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "serving", csr, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the certificate controller deciding a kubelet-serving request: %v", err)
	}
}
