package bootstrapcsr

import (
	"context"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
)

func TestValidate(t *testing.T) {
	boot := &auth.User{Name: "system:bootstrap:abcdef", Groups: []string{auth.GroupBootstrappers, auth.GroupAuthenticated}}
	node := &auth.User{Name: "system:node:n1", Groups: []string{auth.GroupNodes, auth.GroupAuthenticated}}
	for _, tt := range []struct {
		u         *auth.User
		signer    string
		forbidden bool
	}{
		{boot, certificatesv1.KubeAPIServerClientKubeletSignerName, false},
		{boot, certificatesv1.KubeletServingSignerName, true},
		{boot, certificatesv1.KubeAPIServerClientSignerName, true},
		{boot, "example.com/anything", true},
		{node, certificatesv1.KubeletServingSignerName, false},
		{nil, certificatesv1.KubeAPIServerClientSignerName, false},
	} {
		csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: tt.signer}}
		if err := validate(context.Background(), &admission.Attributes{Operation: admission.Create, Object: csr, User: tt.u}); apierrors.IsForbidden(err) != tt.forbidden {
			t.Errorf("%v asking %s: %v, want forbidden %v", tt.u, tt.signer, err, tt.forbidden)
		}
	}
}
