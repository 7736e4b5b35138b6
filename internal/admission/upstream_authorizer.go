package admission

import (
	"context"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"plainkube.dev/plainkube/internal/auth"
)

// UpstreamAuthorizer lets k8s.io/apiserver code that plugins reuse — the
// `authorizer` variable of CEL in webhooks' matchConditions and in
// admission policies — ask the API server's own authorizer.
func UpstreamAuthorizer(a auth.Authorizer) authorizer.UnconditionalAuthorizer {
	return upstreamAuthorizer{a}
}

type upstreamAuthorizer struct{ authz auth.Authorizer }

func (x upstreamAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	attrs := auth.Attributes{
		Verb: a.GetVerb(), IsResource: a.IsResourceRequest(), Path: a.GetPath(), APIGroup: a.GetAPIGroup(), APIVersion: a.GetAPIVersion(),
		Namespace: a.GetNamespace(), Resource: a.GetResource(), Subresource: a.GetSubresource(), Name: a.GetName(),
	}
	if u := a.GetUser(); u != nil {
		attrs.User = &auth.User{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
	}
	d, reason, err := x.authz.Authorize(ctx, attrs)
	switch d {
	case auth.Allow:
		return authorizer.DecisionAllow, reason, err
	case auth.Deny:
		return authorizer.DecisionDeny, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}
