package certificates

import (
	"encoding/pem"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func resourceOf(t *testing.T, kind string) registry.Resource {
	t.Helper()
	for _, r := range Resources() {
		if r.Kind.Kind == kind {
			return r
		}
	}
	t.Fatalf("no %s", kind)
	return registry.Resource{}
}

func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestClusterTrustBundleValidation(t *testing.T) {
	st := resourceOf(t, "ClusterTrustBundle").Strategy
	ca, ca2 := testCA(t), testCA(t)
	key := testKey(t)
	now := time.Now()
	leaf := testCert(t, key.Public(), key, false, now, now.Add(time.Hour))
	withHeader := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"a": "b"}, Bytes: []byte("x")}))
	ctb := func(name, signer, bundle string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: bundle}}
	}
	for _, tt := range []struct {
		name string
		obj  *certificatesv1.ClusterTrustBundle
		want []string
	}{
		{"no signer", ctb("roots", "", ca+ca2), nil},
		{"signer", ctb("example.com:foo:roots", "example.com/foo", ca), nil},
		{"colon without signer", ctb("a:b", "", ca), []string{`metadata.name: Invalid value: "a:b": ClusterTrustBundle without signer name must not have ":" in its name`}},
		{"signer prefix missing", ctb("roots", "example.com/foo", ca), []string{`metadata.name: Invalid value: "roots": ClusterTrustBundle for signerName example.com/foo must be named with prefix example.com:foo:`}},
		{"bad signer", ctb("roots", "foo", ca), []string{`metadata.name: Invalid value: "roots": ClusterTrustBundle for signerName foo must be named with prefix foo:`,
			`spec.signerName: Invalid value: "foo": must be a fully qualified domain and path of the form 'example.com/signer-name'`}},
		{"empty bundle", ctb("roots", "", ""), []string{`spec.trustBundle: Invalid value: "<value omitted>": at least one trust anchor must be provided`}},
		{"not a CA", ctb("roots", "", leaf), []string{`spec.trustBundle: Invalid value: "<value omitted>": entry 0 does not have the CA bit set`}},
		{"other block", ctb("roots", "", ca+"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), []string{`spec.trustBundle: Invalid value: "<value omitted>": entry 1 has bad block type: PRIVATE KEY`}},
		{"headers", ctb("roots", "", withHeader), []string{`spec.trustBundle: Invalid value: "<value omitted>": entry 0 has PEM block headers`}},
		{"garbage", ctb("roots", "", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), []string{`spec.trustBundle: Invalid value: "<value omitted>": entry 0 does not parse as X.509`}},
		{"duplicate", ctb("roots", "", ca+ca2+ca), []string{`spec.trustBundle: Invalid value: "<value omitted>": duplicate trust anchor (indices [0 2])`}},
		{"too big", ctb("roots", "", strings.Repeat(ca, maxTrustBundleSize/len(ca)+1)), []string{`spec.trustBundle: Too long: may not be more than 1048576 bytes`}},
	} {
		got := errorStrings(st.Validate(tt.obj))
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s: errors\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}

	old := ctb("example.com:foo:roots", "example.com/foo", ca)
	moved := old.DeepCopy()
	moved.Spec.SignerName = "example.com/bar"
	got := errorStrings(st.ValidateUpdate(moved, old))
	want := []string{
		`metadata.name: Invalid value: "example.com:foo:roots": ClusterTrustBundle for signerName example.com/bar must be named with prefix example.com:bar:`,
		`spec.signerName: Invalid value: "example.com/bar": field is immutable`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changing the signer: %q, want %q", got, want)
	}
	if f := st.SelectableFields(old); f["spec.signerName"] != "example.com/foo" {
		t.Errorf("selectable fields = %v", f)
	}
}
