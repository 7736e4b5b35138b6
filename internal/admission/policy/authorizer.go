package policy

import (
	"context"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"plainkube.dev/plainkube/internal/auth"
)

// authorizerAdapter answers the `authorizer` variable of policy
// expressions with the API server's own authorizer.
type authorizerAdapter struct{ authz auth.Authorizer }

func (e *evaluation) authorizer() authorizer.UnconditionalAuthorizer {
	if e.authz == nil {
		return nil
	}
	return authorizerAdapter{e.authz}
}

func (x authorizerAdapter) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	var u *auth.User
	if ui := a.GetUser(); ui != nil {
		u = &auth.User{Name: ui.GetName(), UID: ui.GetUID(), Groups: ui.GetGroups(), Extra: ui.GetExtra()}
	}
	d, reason, err := x.authz.Authorize(ctx, auth.Attributes{
		User: u, Verb: a.GetVerb(), IsResource: a.IsResourceRequest(), Path: a.GetPath(),
		APIGroup: a.GetAPIGroup(), APIVersion: a.GetAPIVersion(), Namespace: a.GetNamespace(),
		Resource: a.GetResource(), Subresource: a.GetSubresource(), Name: a.GetName(),
	})
	switch d {
	case auth.Allow:
		return authorizer.DecisionAllow, reason, err
	case auth.Deny:
		return authorizer.DecisionDeny, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}
