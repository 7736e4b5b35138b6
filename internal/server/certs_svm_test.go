package server

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func testECKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// pemCert is a PEM certificate for pub signed by signer (self-issued).
func pemCert(t *testing.T, pub crypto.PublicKey, signer crypto.Signer, isCA bool, notBefore, notAfter time.Time) string {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, NotBefore: notBefore, NotAfter: notAfter,
		IsCA: isCA, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// grantAlice binds the cluster role name, of rules, to the user alice.
func grantAlice(t *testing.T, admin kubernetes.Interface, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// untilNotForbidden runs f until it is not refused, as it is while the
// authorizer has not seen new RBAC rules yet (10 s at most).
func untilNotForbidden(f func() error) error {
	var err error
	_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		err = f()
		return !apierrors.IsForbidden(err), nil
	})
	return err
}

// TestClusterTrustBundles: CRUD of certificates.k8s.io/v1
// ClusterTrustBundles with upstream's validation, the spec.signerName
// field selector, and ClusterTrustBundleAttest: a bundle naming a signer
// needs attest on it.
func TestClusterTrustBundles(t *testing.T) {
	_, cfg := startServer(t)
	admin := clientset(t, cfg)
	ctx := context.Background()
	key := testECKey(t)
	now := time.Now()
	ca := pemCert(t, key.Public(), key, true, now, now.Add(time.Hour))
	ctbs := admin.CertificatesV1().ClusterTrustBundles()

	_, err := ctbs.Create(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "roots"},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/one", TrustBundle: ca}}, metav1.CreateOptions{})
	want := `ClusterTrustBundle.certificates.k8s.io "roots" is invalid: metadata.name: Invalid value: "roots": ClusterTrustBundle for signerName example.com/one must be named with prefix example.com:one:`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("a badly named bundle: %v, want %q", err, want)
	}
	leaf := pemCert(t, key.Public(), key, false, now, now.Add(time.Hour))
	_, err = ctbs.Create(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "leaf"},
		Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: leaf}}, metav1.CreateOptions{})
	want = `ClusterTrustBundle.certificates.k8s.io "leaf" is invalid: spec.trustBundle: Invalid value: "<value omitted>": entry 0 does not have the CA bit set`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("a bundle of a leaf certificate: %v, want %q", err, want)
	}

	signed, err := ctbs.Create(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:one:roots"},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/one", TrustBundle: ca}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctbs.Create(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: ca}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := ctbs.List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=example.com/one"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != signed.Name {
		t.Fatalf("bundles of example.com/one: %v %v", list, err)
	}
	signed.Spec.SignerName = "example.com/two"
	if _, err := ctbs.Update(ctx, signed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.signerName: Invalid value: "example.com/two": field is immutable`) {
		t.Fatalf("changing a bundle's signer: %v", err)
	}
	signed.Spec.SignerName = "example.com/one"
	key2 := testECKey(t)
	signed.Spec.TrustBundle = ca + pemCert(t, key2.Public(), key2, true, now, now.Add(time.Hour))
	if signed, err = ctbs.Update(ctx, signed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Attest: alice may write bundles, but a bundle naming a signer needs
	// attest on it.
	grantAlice(t, admin, "ctb-writer", rbacv1.PolicyRule{Verbs: []string{"create", "update", "get"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"clustertrustbundles"}})
	alice := impersonating(t, cfg, "alice").CertificatesV1().ClusterTrustBundles()
	if err := untilNotForbidden(func() error {
		_, err := alice.Create(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "alices"},
			Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: ca}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatalf("alice writing a bundle without a signer: %v", err)
	}
	_, err = alice.Create(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:one:alices"},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/one", TrustBundle: ca}}, metav1.CreateOptions{})
	want = `clustertrustbundles.certificates.k8s.io "example.com:one:alices" is forbidden: user not permitted to attest for signerName "example.com/one"`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("alice attesting without permission: %v, want %q", err, want)
	}
	grantAlice(t, admin, "attester", rbacv1.PolicyRule{Verbs: []string{"attest"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"signers"},
		ResourceNames: []string{"example.com/*"}})
	if err := untilNotForbidden(func() error {
		_, err := alice.Create(ctx, &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:one:alices"},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/one", TrustBundle: ca}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatalf("alice attesting for example.com/*: %v", err)
	}

	if err := ctbs.Delete(ctx, signed.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctbs.Get(ctx, signed.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a deleted bundle: %v", err)
	}
}

// TestPodCertificateRequests: CRUD of certificates.k8s.io/v1
// PodCertificateRequests: upstream's create validation, an immutable
// spec, issuance through /status by a user who may sign for the signer
// (422 for one who may not, as upstream), then a frozen status.
func TestPodCertificateRequests(t *testing.T) {
	_, cfg := startServer(t)
	admin := clientset(t, cfg)
	ctx := context.Background()
	pcrs := admin.CertificatesV1().PodCertificateRequests("default")
	key := testECKey(t)
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	pcr := &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: "web-cert"}, Spec: certificatesv1.PodCertificateRequestSpec{
		SignerName: "example.com/one", PodName: "web", PodUID: "pod-uid", ServiceAccountName: "default", ServiceAccountUID: "sa-uid",
		NodeName: "node-1", NodeUID: "node-uid", MaxExpirationSeconds: ptr.To[int32](86400 * 100), StubPKCS10Request: stub,
	}}
	_, err = pcrs.Create(ctx, pcr, metav1.CreateOptions{})
	want := `PodCertificateRequest.certificates.k8s.io "web-cert" is invalid: spec.maxExpirationSeconds: Invalid value: 8640000: must be in the range [3600, 7862400]`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("a request for 100 days: %v, want %q", err, want)
	}
	pcr.Spec.MaxExpirationSeconds = ptr.To[int32](86400)
	pcr.Status.Conditions = []metav1.Condition{{Type: "Issued", Status: metav1.ConditionTrue, Reason: "Forged", LastTransitionTime: metav1.Now()}}
	if pcr, err = pcrs.Create(ctx, pcr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(pcr.Status.Conditions) != 0 {
		t.Fatalf("a request created with a status: %+v", pcr.Status)
	}
	pcr.Spec.PodName = "other"
	if _, err := pcrs.Update(ctx, pcr, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.HasSuffix(err.Error(), "field is immutable") {
		t.Fatalf("changing a request's spec: %v", err)
	}
	pcr.Spec.PodName = "web"
	pcr.Labels = map[string]string{"app": "web"}
	if pcr, err = pcrs.Update(ctx, pcr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Issue: a chain for the requested key, its times consistent.
	now := time.Now().Truncate(time.Second)
	issuer := testECKey(t)
	issued := pcr.DeepCopy()
	issued.Status = certificatesv1.PodCertificateRequestStatus{
		Conditions:       []metav1.Condition{{Type: "Issued", Status: metav1.ConditionTrue, Reason: "Signed", LastTransitionTime: metav1.Now()}},
		CertificateChain: pemCert(t, key.Public(), issuer, false, now, now.Add(2*time.Hour)),
		NotBefore:        ptr.To(metav1.NewTime(now)), NotAfter: ptr.To(metav1.NewTime(now.Add(2 * time.Hour))), BeginRefreshAt: ptr.To(metav1.NewTime(now.Add(time.Hour))),
	}

	grantAlice(t, admin, "pcr-status", rbacv1.PolicyRule{Verbs: []string{"get", "update"}, APIGroups: []string{certificatesv1.GroupName},
		Resources: []string{"podcertificaterequests", "podcertificaterequests/status"}})
	alice := impersonating(t, cfg, "alice").CertificatesV1().PodCertificateRequests("default")
	err = untilNotForbidden(func() error { _, err := alice.UpdateStatus(ctx, issued, metav1.UpdateOptions{}); return err })
	want = `PodCertificateRequest.certificates.k8s.io "web-cert" is invalid: spec.signerName: Forbidden: User "alice" is not permitted to "sign" for signer "example.com/one"`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("alice issuing without sign: %v, want %q", err, want)
	}

	wrongKey := issued.DeepCopy()
	wrongKey.Status.CertificateChain = pemCert(t, issuer.Public(), issuer, false, now, now.Add(2*time.Hour))
	if _, err := pcrs.UpdateStatus(ctx, wrongKey, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "leaf certificate was not issued to the requested public key") {
		t.Fatalf("issuing for another key: %v", err)
	}
	got, err := pcrs.UpdateStatus(ctx, issued, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.CertificateChain != issued.Status.CertificateChain || got.Labels["app"] != "web" {
		t.Fatalf("issued request: %+v", got)
	}
	got.Status.Conditions[0].Type = "Failed"
	got.Status.CertificateChain, got.Status.NotBefore, got.Status.NotAfter, got.Status.BeginRefreshAt = "", nil, nil, nil
	_, err = pcrs.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	want = `PodCertificateRequest.certificates.k8s.io "web-cert" is invalid: status: Invalid value: immutable after PodCertificateRequest is issued, denied, or failed`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("changing an issued request: %v, want %q", err, want)
	}

	if err := pcrs.Delete(ctx, pcr.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if list, err := pcrs.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Fatalf("requests after delete: %v %v", list, err)
	}
}

// TestStorageVersionMigrations: CRUD of storagemigration.k8s.io/v1
// StorageVersionMigrations with upstream's validation and status rules
// (nothing runs the migrations: the status is whatever a client writes).
func TestStorageVersionMigrations(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	svms := cs.StoragemigrationV1().StorageVersionMigrations()

	_, err := svms.Create(ctx, &storagemigrationv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}, metav1.CreateOptions{})
	want := `StorageVersionMigration.storagemigration.k8s.io "bad" is invalid: spec.resource.resource: Required value: resource is required to be set`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("a migration of nothing: %v, want %q", err, want)
	}
	svm, err := svms.Create(ctx, &storagemigrationv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "secrets"},
		Spec: storagemigrationv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Resource: "secrets"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svm.Spec.Resource.Resource = "configmaps"
	if _, err := svms.Update(ctx, svm, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.HasSuffix(err.Error(), "field is immutable") {
		t.Fatalf("changing a migration's resource: %v", err)
	}
	svm.Spec.Resource.Resource = "secrets"
	svm.Status = storagemigrationv1.StorageVersionMigrationStatus{ResourceVersion: "42",
		Conditions: []metav1.Condition{{Type: "Succeeded", Status: metav1.ConditionTrue, Reason: "Done", LastTransitionTime: metav1.Now()}}}
	if svm, err = svms.UpdateStatus(ctx, svm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if svm.Status.ResourceVersion != "42" || len(svm.Status.Conditions) != 1 {
		t.Fatalf("status after /status: %+v", svm.Status)
	}
	svm.Status.Conditions[0].Status = metav1.ConditionFalse
	if _, err := svms.UpdateStatus(ctx, svm, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.HasSuffix(err.Error(), "Success condition cannot be set to false once it is true") {
		t.Fatalf("undoing success: %v", err)
	}
	if err := svms.Delete(ctx, svm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svms.Get(ctx, svm.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a deleted migration: %v", err)
	}
}

// TestPodCertificateRequestsFromNodes: a node creates a request for its
// own pod, for a signer the pod mounts certificates of, and reads back
// the requests naming it (get, and list with spec.nodeName); a request
// for another node's pod is refused with upstream's message.
func TestPodCertificateRequestsFromNodes(t *testing.T) {
	_, cfg := startServer(t)
	admin := clientset(t, cfg)
	ctx := context.Background()
	node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podOn := func(name, nodeName string) *corev1.Pod {
		pod := simplePod(name)
		pod.Spec.NodeName, pod.Spec.ServiceAccountName = nodeName, "app"
		pod.Spec.Volumes = []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/one", KeyType: "ECDSAP256", CredentialBundlePath: "bundle.pem"}}}}}}}
		pod, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pod
	}
	web, far := podOn("web", "n1"), podOn("far", "n2")
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, testECKey(t))
	if err != nil {
		t.Fatal(err)
	}
	request := func(name string, pod *corev1.Pod) *certificatesv1.PodCertificateRequest {
		return &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: "example.com/one", PodName: pod.Name, PodUID: pod.UID, ServiceAccountName: "app", ServiceAccountUID: sa.UID,
			NodeName: "n1", NodeUID: node.UID, MaxExpirationSeconds: ptr.To[int32](86400), StubPKCS10Request: stub}}
	}
	kubelet := impersonating(t, cfg, "system:node:n1", "system:nodes").CertificatesV1().PodCertificateRequests("default")
	if _, err := kubelet.Create(ctx, request("web-cert", web), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = kubelet.Create(ctx, request("far-cert", far), metav1.CreateOptions{})
	want := `podcertificaterequests.certificates.k8s.io "far-cert" is forbidden: pod "default/far" is not running on node "n1" named in the PodCertificateRequest`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("a request for another node's pod: %v, want %q", err, want)
	}
	// The authorizer's graph learns of the request from its informer.
	if err := untilNotForbidden(func() error { _, err := kubelet.Get(ctx, "web-cert", metav1.GetOptions{}); return err }); err != nil {
		t.Fatalf("the node reading its request: %v", err)
	}
	if list, err := kubelet.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("the node listing its requests: %v %v", list, err)
	}
	if _, err := kubelet.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the node listing every request: %v", err)
	}
}
