package auth

import "context"

// GroupServiceAccounts holds every service account.
const GroupServiceAccounts = "system:serviceaccounts"

// IssuerDiscoveryAuthorizer lets service accounts read the service-account
// issuer's discovery documents, as upstream's default binding of
// system:service-account-issuer-discovery to system:serviceaccounts does.
// It has no opinion otherwise. Interim, until RBAC serves the bootstrap
// roles.
type IssuerDiscoveryAuthorizer struct{}

func (IssuerDiscoveryAuthorizer) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if a.User != nil && a.User.InGroup(GroupServiceAccounts) && !a.IsResource && a.Verb == "get" &&
		(a.Path == "/.well-known/openid-configuration" || a.Path == "/openid/v1/jwks") {
		return Allow, "", nil
	}
	return NoOpinion, "", nil
}
