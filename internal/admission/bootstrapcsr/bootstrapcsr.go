package bootstrapcsr

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
)

// Name is the plugin's name.
const Name = "BootstrapCSRRestriction"

var csrs = schema.GroupResource{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests"}

// New is the plugin: it validates CSRs being created.
func New() admission.Plugin {
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{csrs}, Operations: []admission.Operation{admission.Create}, Validate: validate}
}

func validate(_ context.Context, a *admission.Attributes) error {
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	u := a.User
	if !ok || u == nil || !u.InGroup(auth.GroupBootstrappers) || csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil
	}
	return apierrors.NewForbidden(csrs, csr.Name, fmt.Errorf("a bootstrap token may only ask for a node client certificate (signerName %s), not %q",
		certificatesv1.KubeAPIServerClientKubeletSignerName, csr.Spec.SignerName))
}
