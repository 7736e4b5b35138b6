package certificates

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func testPCR(t *testing.T, stub []byte) *certificatesv1.PodCertificateRequest {
	return &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "req", Namespace: "default"},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: "example.com/foo", PodName: "web", PodUID: "pod-uid",
			ServiceAccountName: "default", ServiceAccountUID: "sa-uid", NodeName: "node-1", NodeUID: "node-uid",
			MaxExpirationSeconds: ptr.To[int32](86400), StubPKCS10Request: stub,
		},
	}
}

func TestPodCertificateRequestValidation(t *testing.T) {
	st := resourceOf(t, "PodCertificateRequest").Strategy
	key := testKey(t)
	stub := testStubRequest(t, key)
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		change func(*certificatesv1.PodCertificateRequest)
		want   []string
	}{
		{"valid", func(*certificatesv1.PodCertificateRequest) {}, nil},
		{"ed25519", func(p *certificatesv1.PodCertificateRequest) { p.Spec.StubPKCS10Request = testStubRequest(t, edKey) }, nil},
		{"references", func(p *certificatesv1.PodCertificateRequest) {
			p.Spec.PodName, p.Spec.PodUID, p.Spec.ServiceAccountUID = "Web", "", types.UID(strings.Repeat("u", 129))
			p.Spec.UnverifiedUserAnnotations = map[string]string{"nodomain": "x"}
		}, []string{
			`spec.unverifiedUserAnnotations: Invalid value: "nodomain": must be a domain-prefixed key (such as "acme.io/foo")`,
			`spec.podName: Invalid value: "Web": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`spec.podUID: Invalid value: "": must not be empty`,
			`spec.serviceAccountUID: Too long: may not be more than 128 bytes`,
		}},
		{"no expiration", func(p *certificatesv1.PodCertificateRequest) { p.Spec.MaxExpirationSeconds = nil },
			[]string{`spec.maxExpirationSeconds: Required value: must be set`}},
		{"kubernetes signer limit", func(p *certificatesv1.PodCertificateRequest) {
			p.Spec.SignerName, p.Spec.MaxExpirationSeconds = "kubernetes.io/foo", ptr.To[int32](86401)
		}, []string{`spec.maxExpirationSeconds: Invalid value: 86401: must be in the range [3600, 86400]`}},
		{"other signer limit", func(p *certificatesv1.PodCertificateRequest) { p.Spec.MaxExpirationSeconds = ptr.To[int32](3599) },
			[]string{`spec.maxExpirationSeconds: Invalid value: 3599: must be in the range [3600, 7862400]`}},
		{"no request", func(p *certificatesv1.PodCertificateRequest) { p.Spec.StubPKCS10Request = nil },
			[]string{`spec: Invalid value: exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set`}},
		{"bad request", func(p *certificatesv1.PodCertificateRequest) { p.Spec.StubPKCS10Request = []byte("junk") },
			[]string{`spec.stubPKCS10Request: Invalid value: must be a valid PKCS#10 CSR`}},
		{"bad signature", func(p *certificatesv1.PodCertificateRequest) {
			bad := append([]byte(nil), stub...)
			bad[len(bad)-3] ^= 0xff
			p.Spec.StubPKCS10Request = bad
		}, []string{`spec.stubPKCS10Request: Invalid value: invalid signature`}},
	} {
		pcr := testPCR(t, stub)
		tt.change(pcr)
		got := errorStrings(st.Validate(pcr))
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s: errors\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}

	// An unset maxExpirationSeconds defaults to a day, as the API's.
	unset := testPCR(t, stub)
	unset.Spec.MaxExpirationSeconds = nil
	st.Default(unset)
	if e := unset.Spec.MaxExpirationSeconds; e == nil || *e != 86400 {
		t.Errorf("defaulted maxExpirationSeconds = %v", e)
	}

	old := testPCR(t, stub)
	changed := old.DeepCopy()
	changed.Spec.PodName = "other"
	if got := errorStrings(st.ValidateUpdate(changed, old)); len(got) != 1 || !strings.HasPrefix(got[0], "spec: Invalid value:") || !strings.HasSuffix(got[0], "field is immutable") {
		t.Errorf("changing the spec: %q", got)
	}
}

func TestPodCertificateRequestStatus(t *testing.T) {
	st := resourceOf(t, "PodCertificateRequest").Strategy
	key := testKey(t)
	pending := testPCR(t, testStubRequest(t, key))
	now := time.Now().Truncate(time.Second)
	issuer := testKey(t)
	chain := testCert(t, key.Public(), issuer, false, now, now.Add(2*time.Hour))
	cond := func(typ string) []metav1.Condition {
		return []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: metav1.NewTime(now)}}
	}
	issued := func() *certificatesv1.PodCertificateRequest {
		p := pending.DeepCopy()
		p.Status = certificatesv1.PodCertificateRequestStatus{Conditions: cond("Issued"), CertificateChain: chain,
			NotBefore: ptr.To(metav1.NewTime(now)), NotAfter: ptr.To(metav1.NewTime(now.Add(2 * time.Hour))), BeginRefreshAt: ptr.To(metav1.NewTime(now.Add(time.Hour)))}
		return p
	}
	for _, tt := range []struct {
		name   string
		status func(*certificatesv1.PodCertificateRequest)
		old    *certificatesv1.PodCertificateRequest
		want   []string
	}{
		{"issued", func(*certificatesv1.PodCertificateRequest) {}, pending, nil},
		{"denied", func(p *certificatesv1.PodCertificateRequest) {
			p.Status = certificatesv1.PodCertificateRequestStatus{Conditions: cond("Denied")}
		}, pending, nil},
		{"denied with a chain", func(p *certificatesv1.PodCertificateRequest) { p.Status.Conditions = cond("Denied") }, pending,
			[]string{`status: Invalid value: non-condition status fields must be empty when denying or failing the PodCertificateRequest`}},
		{"two terminal conditions", func(p *certificatesv1.PodCertificateRequest) {
			p.Status.Conditions = append(cond("Issued"), cond("Failed")...)
		}, pending, []string{`status.conditions.[1].type: Invalid value: "Failed": There may be at most one condition with type "Issued", "Denied", or "Failed"`}},
		{"unknown condition", func(p *certificatesv1.PodCertificateRequest) { p.Status.Conditions = cond("Ready") }, pending,
			[]string{`status.conditions.[0].type: Unsupported value: "Ready": supported values: "Issued", "Denied", "Failed"`}},
		{"pending status set", func(p *certificatesv1.PodCertificateRequest) { p.Status.Conditions = nil }, pending,
			[]string{`status: Invalid value: status is immutable unless transitioning to "Issued", "Denied", or "Failed"`}},
		{"frozen once issued", func(p *certificatesv1.PodCertificateRequest) {
			p.Status = certificatesv1.PodCertificateRequestStatus{Conditions: cond("Failed")}
		}, issued(), []string{`status: Invalid value: immutable after PodCertificateRequest is issued, denied, or failed`}},
		{"another key", func(p *certificatesv1.PodCertificateRequest) {
			p.Status.CertificateChain = testCert(t, issuer.Public(), issuer, false, now, now.Add(2*time.Hour))
		}, pending, []string{`status.certificateChain: Invalid value: "<value omitted>": leaf certificate was not issued to the requested public key`}},
		{"no times", func(p *certificatesv1.PodCertificateRequest) { p.Status.NotBefore, p.Status.BeginRefreshAt = nil, nil }, pending, []string{
			`status.notBefore: Required value: must be present and consistent with the issued certificate`,
			`status.beginRefreshAt: Required value: must be present and in the range [notbefore+10min, notafter-10min]`,
		}},
		{"notAfter off", func(p *certificatesv1.PodCertificateRequest) {
			p.Status.NotAfter = ptr.To(metav1.NewTime(now.Add(time.Hour)))
		}, pending,
			[]string{`status.notAfter: Invalid value: "` + now.Add(time.Hour).UTC().Format(time.RFC3339) + `": must be set to the NotAfter time encoded in the leaf certificate`}},
		{"refresh too late", func(p *certificatesv1.PodCertificateRequest) {
			p.Status.BeginRefreshAt = ptr.To(metav1.NewTime(now.Add(2*time.Hour - time.Minute)))
		}, pending, []string{`status.beginRefreshAt: Invalid value: "` + now.Add(2*time.Hour-time.Minute).UTC().Format(time.RFC3339) + `": must be at least 10 minutes before status.notAfter`}},
		{"not a certificate", func(p *certificatesv1.PodCertificateRequest) { p.Status.CertificateChain = "" }, pending,
			[]string{`status.certificateChain: Invalid value: "": issued certificate chain must contain at least one certificate`}},
	} {
		pcr := issued()
		tt.status(pcr)
		got := errorStrings(st.ValidateStatusUpdate(pcr, tt.old))
		for i := range got {
			// The chain is long: compare up to the value.
			if strings.HasPrefix(got[i], "status.certificateChain: Invalid value: \"-----") {
				got[i] = `status.certificateChain: Invalid value: "<value omitted>"` + got[i][strings.LastIndex(got[i], `": `)+1:]
			}
		}
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s: errors\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}

	// The lifetime bound is the spec's maxExpirationSeconds.
	short := pending.DeepCopy()
	short.Spec.MaxExpirationSeconds = ptr.To[int32](3600)
	p := issued()
	p.Spec = short.Spec
	if got := errorStrings(st.ValidateStatusUpdate(p, short)); len(got) != 1 || !strings.HasSuffix(got[0], "leaf certificate lifetime must be <= spec.maxExpirationSeconds (3600)") {
		t.Errorf("a certificate outliving maxExpirationSeconds: %q", got)
	}
}
