package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
)

// signerGrants allows verb on the signers named in its map, per user.
type signerGrants map[string][]string // "user verb" -> signer names

func (g signerGrants) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	if a.APIGroup != certificatesv1.GroupName || a.Resource != "signers" || !a.IsResource {
		return auth.NoOpinion, "", nil
	}
	for _, name := range g[a.User.Name+" "+a.Verb] {
		if name == a.Name {
			return auth.Allow, "", nil
		}
	}
	return auth.NoOpinion, "", nil
}

var grants = signerGrants{
	"approver approve": {"example.com/one"},
	"wild approve":     {"example.com/*"},
	"signer sign":      {"example.com/one"},
}

func csrAttrs(op admission.Operation, sub, user string, obj, old *certificatesv1.CertificateSigningRequest) *admission.Attributes {
	a := &admission.Attributes{Operation: op, Subresource: sub, Name: "req", User: &auth.User{Name: user},
		Resource: certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")}
	if obj != nil {
		a.Object = obj
	}
	if old != nil {
		a.OldObject = old
	}
	return a
}

func csrFor(signer string) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "req"}, Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer}}
}

func TestApproval(t *testing.T) {
	p := Approval(grants)
	for _, tt := range []struct {
		user, signer string
		allowed      bool
	}{
		{"approver", "example.com/one", true},
		{"approver", "example.com/two", false},
		{"wild", "example.com/two", true},
		{"wild", "other.com/two", false},
		{"signer", "example.com/one", false},
	} {
		a := csrAttrs(admission.Update, "approval", tt.user, csrFor(tt.signer), csrFor(tt.signer))
		if !p.Handles(a) {
			t.Fatal("the plugin does not handle /approval updates")
		}
		err := p.Validate(context.Background(), a)
		if tt.allowed != (err == nil) {
			t.Errorf("%s approving for %s: %v", tt.user, tt.signer, err)
		}
		want := `certificatesigningrequests.certificates.k8s.io "req" is forbidden: user not permitted to approve requests with signerName "` + tt.signer + `"`
		if err != nil && (!apierrors.IsForbidden(err) || err.Error() != want) {
			t.Errorf("refusal %q, want %q", err, want)
		}
	}
	if p.Handles(csrAttrs(admission.Update, "status", "x", csrFor("a/b"), csrFor("a/b"))) {
		t.Error("the approval plugin handles /status")
	}
}

func TestSigning(t *testing.T) {
	p := Signing(grants)
	issued := csrFor("example.com/one")
	issued.Status.Certificate = []byte("cert")
	for _, tt := range []struct {
		user     string
		obj, old *certificatesv1.CertificateSigningRequest
		allowed  bool
	}{
		{"signer", issued, csrFor("example.com/one"), true},
		{"approver", issued, csrFor("example.com/one"), false},
		// No change to the certificate or conditions needs no permission.
		{"approver", csrFor("example.com/one"), csrFor("example.com/one"), true},
	} {
		err := p.Validate(context.Background(), csrAttrs(admission.Update, "status", tt.user, tt.obj, tt.old))
		if tt.allowed != (err == nil) {
			t.Errorf("%s writing status: %v", tt.user, err)
		}
		want := `certificatesigningrequests.certificates.k8s.io "req" is forbidden: user not permitted to sign requests with signerName "example.com/one"`
		if err != nil && err.Error() != want {
			t.Errorf("refusal %q, want %q", err, want)
		}
	}
}

func request(t *testing.T, orgs ...string) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "u", Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestSubjectRestriction(t *testing.T) {
	p := SubjectRestriction()
	for _, tt := range []struct {
		signer  string
		req     []byte
		wantErr string
	}{
		{certificatesv1.KubeAPIServerClientSignerName, request(t, "dev", "system:masters"),
			`certificatesigningrequests.certificates.k8s.io "req" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`},
		{certificatesv1.KubeAPIServerClientSignerName, request(t, "dev"), ""},
		{"example.com/one", request(t, "system:masters"), ""},
		{certificatesv1.KubeAPIServerClientSignerName, []byte("garbage"), `certificatesigningrequests.certificates.k8s.io "req" is forbidden: failed to parse CSR: `},
	} {
		csr := csrFor(tt.signer)
		csr.Spec.Request = tt.req
		err := p.Validate(context.Background(), csrAttrs(admission.Create, "", "anyone", csr, nil))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.signer, err)
		case tt.wantErr != "" && (err == nil || len(err.Error()) < len(tt.wantErr) || err.Error()[:len(tt.wantErr)] != tt.wantErr):
			t.Errorf("%s: %v, want %q", tt.signer, err, tt.wantErr)
		}
	}
}

func TestAttest(t *testing.T) {
	p := Attest(signerGrants{"attester attest": {"example.com/one"}, "wild attest": {"example.com/*"}})
	ctb := func(signer string, owners ...metav1.OwnerReference) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "b", OwnerReferences: owners},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: "pem"}}
	}
	attrs := func(op admission.Operation, user string, obj, old *certificatesv1.ClusterTrustBundle) *admission.Attributes {
		a := &admission.Attributes{Operation: op, Name: "b", User: &auth.User{Name: user}, Object: obj,
			Resource: certificatesv1.SchemeGroupVersion.WithResource("clustertrustbundles")}
		if old != nil {
			a.OldObject = old
		}
		return a
	}
	changed := ctb("example.com/one")
	changed.Spec.TrustBundle = "other pem"
	for _, tt := range []struct {
		name string
		a    *admission.Attributes
		want string
	}{
		{"no signer", attrs(admission.Create, "nobody", ctb(""), nil), ""},
		{"attester", attrs(admission.Create, "attester", ctb("example.com/one"), nil), ""},
		{"wildcard", attrs(admission.Create, "wild", ctb("example.com/two"), nil), ""},
		{"stranger", attrs(admission.Create, "nobody", ctb("example.com/one"), nil),
			`clustertrustbundles.certificates.k8s.io "b" is forbidden: user not permitted to attest for signerName "example.com/one"`},
		{"stranger changing the bundle", attrs(admission.Update, "nobody", changed, ctb("example.com/one")),
			`clustertrustbundles.certificates.k8s.io "b" is forbidden: user not permitted to attest for signerName "example.com/one"`},
		{"garbage collector's fields only", attrs(admission.Update, "nobody", ctb("example.com/one", metav1.OwnerReference{Name: "o"}), ctb("example.com/one")), ""},
	} {
		if !p.Handles(tt.a) {
			t.Fatalf("%s: not handled", tt.name)
		}
		err := p.Validate(context.Background(), tt.a)
		if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && (got != tt.want || !apierrors.IsForbidden(err))) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestPodCertificateSigning(t *testing.T) {
	p := PodCertificateSigning(grants)
	pcr := func(conditions ...metav1.Condition) *certificatesv1.PodCertificateRequest {
		return &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: "req", Namespace: "ns"},
			Spec: certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/one"}, Status: certificatesv1.PodCertificateRequestStatus{Conditions: conditions}}
	}
	denied := pcr(metav1.Condition{Type: "Denied", Status: metav1.ConditionTrue})
	for _, tt := range []struct {
		user     string
		obj, old *certificatesv1.PodCertificateRequest
		want     string
	}{
		{"signer", denied, pcr(), ""},
		{"approver", pcr(), pcr(), ""}, // the status does not change
		{"approver", denied, pcr(), `PodCertificateRequest.certificates.k8s.io "req" is invalid: spec.signerName: Forbidden: User "approver" is not permitted to "sign" for signer "example.com/one"`},
	} {
		a := &admission.Attributes{Operation: admission.Update, Subresource: "status", Name: "req", Namespace: "ns", User: &auth.User{Name: tt.user},
			Resource: certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests"), Object: tt.obj, OldObject: tt.old}
		if !p.Handles(a) {
			t.Fatal("/status updates not handled")
		}
		err := p.Validate(context.Background(), a)
		if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && (got != tt.want || !apierrors.IsInvalid(err))) {
			t.Errorf("%s: %v, want %q", tt.user, err, tt.want)
		}
	}
}
