package policy

import (
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"plainkube.dev/plainkube/internal/admission"
)

// authorizer answers the `authorizer` variable of policy expressions with
// the API server's own authorizer.
func (e *evaluation) authorizer() authorizer.UnconditionalAuthorizer {
	if e.authz == nil {
		return nil
	}
	return admission.UpstreamAuthorizer(e.authz)
}
