package reviews

import (
	"context"
	"net/http"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry"
)

// serve answers a create of a review from the API server's own
// authenticator and authorizer; nothing is stored.
func serve(rq *registry.Request, kind schema.GroupVersionKind, newObject func() runtime.Object) error {
	r, info, api := rq.R, rq, rq.API
	if info.Verb != "create" || info.Name != "" || info.Subresource != "" {
		return apierrors.NewMethodNotSupported(rq.Resource.GroupResource(), r.Method)
	}
	if err := api.Negotiate(); err != nil {
		return err
	}
	body, err := api.ReadBody()
	if err != nil {
		return err
	}
	obj, err := api.Decode(body, kind, newObject())
	if err != nil {
		return err
	}
	ctx := r.Context()
	requester := auth.UserFrom(ctx)
	switch review := obj.(type) {
	case *authorizationv1.SelfSubjectAccessReview:
		review.Status = accessReview(ctx, api, requester, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
	case *authorizationv1.SubjectAccessReview:
		u := &auth.User{Name: review.Spec.User, UID: review.Spec.UID, Groups: review.Spec.Groups}
		review.Status = accessReview(ctx, api, u, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
	case *authorizationv1.LocalSubjectAccessReview:
		if review.Spec.ResourceAttributes == nil || review.Spec.ResourceAttributes.Namespace != info.Namespace {
			return apierrors.NewBadRequest("spec.resourceAttributes.namespace must match the namespace of the request")
		}
		u := &auth.User{Name: review.Spec.User, UID: review.Spec.UID, Groups: review.Spec.Groups}
		review.Status = accessReview(ctx, api, u, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
	case *authorizationv1.SelfSubjectRulesReview:
		review.Status = rulesReview(ctx, api, requester, review.Spec.Namespace)
	case *authenticationv1.TokenReview:
		review.Status = tokenReview(r, api, review)
	case *authenticationv1.SelfSubjectReview:
		review.Status.UserInfo = requester.UserInfo()
	}
	obj.GetObjectKind().SetGroupVersionKind(kind)
	api.WriteObject(http.StatusCreated, obj)
	return nil
}

func accessReview(ctx context.Context, api registry.API, u *auth.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	a := auth.Attributes{User: u}
	switch {
	case ra != nil:
		a.IsResource, a.Verb, a.Namespace, a.APIGroup, a.APIVersion = true, ra.Verb, ra.Namespace, ra.Group, ra.Version
		a.Resource, a.Subresource, a.Name = ra.Resource, ra.Subresource, ra.Name
	case nra != nil:
		a.Verb, a.Path = nra.Verb, nra.Path
	default:
		return authorizationv1.SubjectAccessReviewStatus{EvaluationError: "exactly one of nonResourceAttributes or resourceAttributes must be specified"}
	}
	d, reason, err := api.Authorizer().Authorize(ctx, a)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: d == auth.Allow, Denied: d == auth.Deny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

func rulesReview(ctx context.Context, api registry.API, u *auth.User, ns string) authorizationv1.SubjectRulesReviewStatus {
	st := authorizationv1.SubjectRulesReviewStatus{ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
	resolver, ok := api.Authorizer().(auth.RuleResolver)
	if !ok {
		st.Incomplete, st.EvaluationError = true, "the authorizer cannot list the rules it grants"
		return st
	}
	rules, err := resolver.RulesFor(u, ns)
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			continue
		}
		st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups,
			Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	if err != nil {
		st.Incomplete, st.EvaluationError = true, err.Error()
	}
	return st
}

// tokenReview authenticates a token with the server's authenticator, for
// spec.audiences (default: the API server's audiences). status.audiences
// are those the token was accepted for; a token of an authenticator that
// knows nothing of audiences is accepted only for the API server's own.
func tokenReview(r *http.Request, api registry.API, review *authenticationv1.TokenReview) authenticationv1.TokenReviewStatus {
	token := review.Spec.Token
	authenticator := api.Authenticator()
	if authenticator == nil || token == "" {
		return authenticationv1.TokenReviewStatus{Error: "token not recognized"}
	}
	var apiAuds []string
	if sa := api.ServiceAccounts(); sa != nil {
		apiAuds = sa.Audiences
	}
	want := review.Spec.Audiences
	if len(want) == 0 {
		want = apiAuds
	}
	req := &http.Request{Header: http.Header{"Authorization": {"Bearer " + token}}}
	req = req.WithContext(auth.WithAudiences(r.Context(), want))
	u, ok, err := authenticator.Authenticate(req)
	if err != nil {
		return authenticationv1.TokenReviewStatus{Error: err.Error()}
	}
	if !ok {
		return authenticationv1.TokenReviewStatus{Error: "token not recognized"}
	}
	auds := u.Audiences
	if auds == nil {
		for _, a := range want {
			if slices.Contains(apiAuds, a) {
				auds = append(auds, a)
			}
		}
		if len(review.Spec.Audiences) > 0 && len(auds) == 0 {
			return authenticationv1.TokenReviewStatus{Error: "token audiences do not match the requested audiences"}
		}
	}
	return authenticationv1.TokenReviewStatus{Authenticated: true, User: u.UserInfo(), Audiences: auds}
}
