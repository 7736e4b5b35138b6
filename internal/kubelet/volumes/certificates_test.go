package volumes

import (
	"context"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// testCertPEM is a self-signed certificate named cn, as PEM.
func testCertPEM(t *testing.T, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestTrustBundleAnchors(t *testing.T) {
	a, b, c := testCertPEM(t, "a"), testCertPEM(t, "b"), testCertPEM(t, "c")
	ctb := func(name, signer string, labels map[string]string, bundle string) certificatesv1.ClusterTrustBundle {
		return certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: bundle}}
	}
	all := []certificatesv1.ClusterTrustBundle{
		ctb("plain", "", nil, "text before\n"+a+"between\n"+b),
		ctb("example.com:s:1", "example.com/s", map[string]string{"alive": "true"}, b+c),
		ctb("example.com:s:2", "example.com/s", map[string]string{"alive": "false"}, a),
	}
	objs := volumeObjects{
		TrustBundle: func(name string) (*certificatesv1.ClusterTrustBundle, error) {
			for i := range all {
				if all[i].Name == name {
					return &all[i], nil
				}
			}
			return nil, notFound("clustertrustbundles", name)
		},
		TrustBundles: func(signer string) ([]certificatesv1.ClusterTrustBundle, error) { return all, nil },
	}
	sorted := func(pems ...string) string {
		out := string(normalizeTrustAnchors([]certificatesv1.ClusterTrustBundle{ctb("x", "", nil, strings.Join(pems, ""))}))
		if strings.Count(out, "BEGIN CERTIFICATE") != len(pems) {
			t.Fatalf("normalized %d certificates into %q", len(pems), out)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		src     corev1.ClusterTrustBundleProjection
		want    string
		wantErr string
	}{
		{"by name, text dropped", corev1.ClusterTrustBundleProjection{Name: ptr.To("plain")}, sorted(a, b), ""},
		{"missing", corev1.ClusterTrustBundleProjection{Name: ptr.To("nope")}, "", `while getting ClusterTrustBundle: clustertrustbundles "nope" not found`},
		{"missing, optional", corev1.ClusterTrustBundleProjection{Name: ptr.To("nope"), Optional: ptr.To(true)}, "", ""},
		{"signer, labels", corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/s"),
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "true"}}}, sorted(b, c), ""},
		{"signer, everything, deduplicated", corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/s"), LabelSelector: &metav1.LabelSelector{}}, sorted(a, b, c), ""},
		{"signer, nil selector", corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/s")}, "",
			"combination of signerName and labelSelector matched zero ClusterTrustBundles"},
		{"signer, nothing matches, optional", corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/s"), Optional: ptr.To(true),
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := trustBundleAnchors(&tc.src, objs)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want || got == nil {
				t.Fatalf("anchors = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestPodCertificateCache follows one source through issuance, refresh
// and denial against a fake API whose requests a test signer answers.
func TestPodCertificateCache(t *testing.T) {
	pod := volumeTestPod()
	cs := fake.NewClientset(
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: "ns", UID: "sa-uid"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}},
	)
	n := 0
	cs.PrependReactor("create", "podcertificaterequests", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pcr := action.(k8stesting.CreateAction).GetObject().(*certificatesv1.PodCertificateRequest).DeepCopy()
		n++
		pcr.Name = pcr.GenerateName + strings.Repeat("x", n)
		pcr.CreationTimestamp = metav1.Now()
		return true, pcr, cs.Tracker().Create(certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests"), pcr, pcr.Namespace)
	})
	ctx := context.Background()
	src := &corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ECDSAP256", MaxExpirationSeconds: ptr.To[int32](3600),
		UserAnnotations: map[string]string{"example.com/path": "/x"}, CredentialBundlePath: "b.pem"}
	var c podCertificateCache
	r := podCertificateRequester{cs, "n1"}
	now := time.Now()
	get := func(at time.Time) ([]byte, []byte, error) { return c.credentials(ctx, r, pod, "v", 0, src, at) }

	if _, _, err := get(now); err == nil || err.Error() != "credential bundle is not issued yet" {
		t.Fatalf("first call: %v", err)
	}
	pcrs := certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests")
	obj, err := cs.Tracker().Get(pcrs, "ns", "req-x")
	if err != nil {
		t.Fatal(err)
	}
	pcr := obj.(*certificatesv1.PodCertificateRequest)
	s := pcr.Spec
	if s.PodName != "p" || s.PodUID != "u1" || s.ServiceAccountName != "sa" || s.ServiceAccountUID != "sa-uid" || s.NodeName != "n1" || s.NodeUID != "node-uid" ||
		*s.MaxExpirationSeconds != 3600 || s.UnverifiedUserAnnotations["example.com/path"] != "/x" || len(pcr.OwnerReferences) != 1 || pcr.OwnerReferences[0].UID != "u1" {
		t.Errorf("request spec = %+v, owners %+v", s, pcr.OwnerReferences)
	}
	csr, err := x509.ParseCertificateRequest(s.StubPKCS10Request)
	if err != nil || csr.CheckSignature() != nil {
		t.Fatalf("stub request: %v", err)
	}
	// Still pending: still an error, and no second request.
	if _, _, err := get(now.Add(time.Second)); err == nil || n != 1 {
		t.Fatalf("pending: %v, %d requests", err, n)
	}
	issue := func(p *certificatesv1.PodCertificateRequest, chain string, refreshAt time.Time) {
		p.Status.CertificateChain = chain
		p.Status.BeginRefreshAt = ptr.To(metav1.NewTime(refreshAt))
		p.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue, Reason: "Issued"}}
		if err := cs.Tracker().Update(pcrs, p, "ns"); err != nil {
			t.Fatal(err)
		}
	}
	chain := testCertPEM(t, "leaf")
	issue(pcr, "junk\n"+chain, now.Add(30*time.Minute))
	key, got, err := get(now.Add(2 * time.Second))
	if err != nil || string(got) != chain || !strings.HasPrefix(string(key), "-----BEGIN PRIVATE KEY-----") {
		t.Fatalf("issued: %q %q %v", key, got, err)
	}
	if k, err := x509.ParsePKCS8PrivateKey(mustPEM(t, key)); err != nil || !k.(*ecdsa.PrivateKey).PublicKey.Equal(csr.PublicKey) {
		t.Fatalf("key does not match the request: %v", err)
	}
	// Past beginRefreshAt (and its jitter): a new request, the old
	// credentials meanwhile.
	later := now.Add(40 * time.Minute)
	if k2, _, err := get(later); err != nil || string(k2) != string(key) || n != 2 {
		t.Fatalf("refresh: %v, %d requests", err, n)
	}
	obj, _ = cs.Tracker().Get(pcrs, "ns", "req-xx")
	chain2 := testCertPEM(t, "leaf2")
	issue(obj.(*certificatesv1.PodCertificateRequest), chain2, later.Add(30*time.Minute))
	if k3, got, err := get(later.Add(time.Second)); err != nil || string(got) != chain2 || string(k3) == string(key) {
		t.Fatalf("refreshed: %v", err)
	}
	// A denial is final.
	c.forget(pod.UID, nil)
	if _, _, err := get(later); err == nil {
		t.Fatal("want not issued yet")
	}
	obj, _ = cs.Tracker().Get(pcrs, "ns", "req-xxx")
	p := obj.(*certificatesv1.PodCertificateRequest)
	p.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue, Reason: "NoWay", Message: "m"}}
	_ = cs.Tracker().Update(pcrs, p, "ns")
	want := `PodCertificateRequest was permanently denied: reason="NoWay" message="m"`
	for range 2 {
		if _, _, err := get(later.Add(time.Second)); err == nil || err.Error() != want {
			t.Fatalf("denied: %v", err)
		}
	}
}

func mustPEM(t *testing.T, b []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatal("no PEM block")
	}
	return block.Bytes
}
