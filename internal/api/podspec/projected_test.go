package podspec

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// TestValidateProjectedCertificateSources checks podCertificate and
// clusterTrustBundle sources against upstream's field paths and messages.
func TestValidateProjectedCertificateSources(t *testing.T) {
	pc := func(mut func(*corev1.PodCertificateProjection)) corev1.VolumeProjection {
		c := &corev1.PodCertificateProjection{SignerName: "example.com/signer", KeyType: "ED25519", CredentialBundlePath: "bundle.pem"}
		if mut != nil {
			mut(c)
		}
		return corev1.VolumeProjection{PodCertificate: c}
	}
	const src = "spec.volumes[1].projected.sources[0]"
	for _, tc := range []struct {
		name    string
		sources []corev1.VolumeProjection
		want    []string // nil: valid
	}{
		{"valid pod certificate", []corev1.VolumeProjection{pc(nil)}, nil},
		{"valid at the bounds", []corev1.VolumeProjection{pc(func(c *corev1.PodCertificateProjection) { c.MaxExpirationSeconds = ptr.To[int32](91 * 86400) })}, nil},
		{"too short", []corev1.VolumeProjection{pc(func(c *corev1.PodCertificateProjection) { c.MaxExpirationSeconds = ptr.To[int32](3599) })},
			[]string{src + ".podCertificate.maxExpirationSeconds: Invalid value: 3599: if provided, maxExpirationSeconds must be >= 3600"}},
		{"too long", []corev1.VolumeProjection{pc(func(c *corev1.PodCertificateProjection) { c.MaxExpirationSeconds = ptr.To[int32](91*86400 + 1) })},
			[]string{src + ".podCertificate.maxExpirationSeconds: Invalid value: 7862401: if provided, maxExpirationSeconds must be <= 7862400"}},
		{"kubernetes.io signer: a day at most", []corev1.VolumeProjection{pc(func(c *corev1.PodCertificateProjection) {
			c.SignerName, c.MaxExpirationSeconds = "kubernetes.io/foo", ptr.To[int32](86401)
		})}, []string{src + ".podCertificate.maxExpirationSeconds: Invalid value: 86401: if provided, maxExpirationSeconds must be <= 86400"}},
		{"bad key type and signer", []corev1.VolumeProjection{pc(func(c *corev1.PodCertificateProjection) { c.KeyType, c.SignerName = "DSA", "nodomain" })}, []string{
			src + `.podCertificate.signerName: Invalid value: "nodomain": must be a fully qualified domain and path of the form 'example.com/signer-name'`,
			src + `.podCertificate.keyType: Unsupported value: "DSA": supported values: "RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"`,
		}},
		{"no path", []corev1.VolumeProjection{pc(func(c *corev1.PodCertificateProjection) { c.CredentialBundlePath = "" })},
			[]string{src + ".podCertificate: Required value: specify at least one of credentialBundlePath, keyPath, and certificateChainPath"}},
		{"bad paths", []corev1.VolumeProjection{pc(func(c *corev1.PodCertificateProjection) { c.KeyPath, c.CertificateChainPath = "../k", "bundle.pem" })}, []string{
			src + `.podCertificate.keyPath: Invalid value: "../k": must not contain '..'`,
			`spec.volumes[1].projected: Invalid value: "bundle.pem": conflicting duplicate paths`,
		}},
		{"bad user annotation", []corev1.VolumeProjection{pc(func(c *corev1.PodCertificateProjection) { c.UserAnnotations = map[string]string{"nodomain": "x"} })},
			[]string{src + `.podCertificate.userAnnotations: Invalid value: "nodomain": must be a domain-prefixed key (such as "acme.io/foo")`}},
		{"trust bundle by name and by signer", []corev1.VolumeProjection{
			{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("example.com:signer:one"), Path: "a.pem"}},
			{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer"), LabelSelector: &metav1.LabelSelector{}, Path: "b.pem"}},
		}, nil},
		{"trust bundle with a bad name and signer", []corev1.VolumeProjection{
			{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("Bad_Name"), Path: "a.pem"}},
			{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: ptr.To("nodomain"), Path: "b.pem"}},
		}, []string{
			src + `.clusterTrustBundle.name: Invalid value: "Bad_Name": not a valid clustertrustbundlename: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`spec.volumes[1].projected.sources[1].clusterTrustBundle.signerName: Invalid value: "nodomain": must be a fully qualified domain and path of the form 'example.com/signer-name'`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "certs", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: tc.sources, DefaultMode: ptr.To[int32](0o644)}}})
			got := errStrings(ValidatePodSpec(&s, nil, field.NewPath("spec")))
			if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
