package webhook

import (
	"context"
	"errors"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	upstreamadmission "k8s.io/apiserver/pkg/admission"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/auth"
)

// matchConditions are evaluated with upstream's CEL compiler and matcher
// (the variables object, oldObject, request and authorizer, upstream's
// cost budget and failure-policy rules), over adapters from this
// package's Attributes and authorizer. The compiler is made at the first
// webhook with matchConditions, not at every process's start (its CEL
// environment costs milliseconds to build).
var conditionCompiler = sync.OnceValue(func() celplugin.ConditionCompiler {
	return celplugin.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// conditionAuthorizer is the authorizer CEL's authorizer variable asks.
type conditionAuthorizer = authorizer.UnconditionalAuthorizer

// compiledConditions compiles h's matchConditions once.
func (h *hook) compiledConditions() matchconditions.Matcher {
	h.compileOnce.Do(func() {
		exprs := make([]celplugin.ExpressionAccessor, len(h.matchConditions))
		for i, c := range h.matchConditions {
			exprs[i] = &matchconditions.MatchCondition{Name: c.Name, Expression: c.Expression}
		}
		kind := "validating"
		if h.mutating {
			kind = "admit"
		}
		fp := h.failurePolicy
		h.conditions = matchconditions.NewMatcher(conditionCompiler().CompileCondition(exprs,
			celplugin.OptionalVariableDeclarations{HasAuthorizer: true}, environment.StoredExpressions), &fp, "webhook", kind, h.name)
	})
	return h.conditions
}

// matchConditions reports whether every matchCondition of inv's webhook
// holds. An error (with failurePolicy Fail) refuses the request with a
// 403, as upstream.
func (r *request) matchConditions(ctx context.Context, inv *invocation, authz conditionAuthorizer) (bool, error) {
	obj, old, err := r.objects(ctx, inv.kind)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	va := &upstreamadmission.VersionedAttributes{
		Attributes:         &upstreamAttributes{a: r.a},
		VersionedKind:      inv.kind,
		VersionedObject:    upstreamadmission.NewLazyObject(obj),
		VersionedOldObject: upstreamadmission.NewLazyObject(old),
	}
	if authz == nil {
		authz = noAuthorizer{}
	}
	res := inv.hook.compiledConditions().Match(ctx, va, nil, authz)
	if res.Error != nil {
		return false, apierrors.NewForbidden(r.a.GroupResource(), r.a.Name, res.Error)
	}
	return res.Matches, nil
}

// upstreamAttributes shows Attributes as upstream's admission.Attributes.
type upstreamAttributes struct{ a *admission.Attributes }

var _ upstreamadmission.Attributes = (*upstreamAttributes)(nil)

func (u *upstreamAttributes) GetName() string                          { return u.a.Name }
func (u *upstreamAttributes) GetNamespace() string                     { return u.a.Namespace }
func (u *upstreamAttributes) GetResource() schema.GroupVersionResource { return u.a.Resource }
func (u *upstreamAttributes) GetSubresource() string                   { return u.a.Subresource }
func (u *upstreamAttributes) GetOperation() upstreamadmission.Operation {
	return upstreamadmission.Operation(u.a.Operation)
}
func (u *upstreamAttributes) GetOperationOptions() runtime.Object { return u.a.Options }
func (u *upstreamAttributes) IsDryRun() bool                      { return u.a.DryRun }
func (u *upstreamAttributes) GetObject() runtime.Object           { return u.a.Object }
func (u *upstreamAttributes) GetOldObject() runtime.Object        { return u.a.OldObject }
func (u *upstreamAttributes) GetKind() schema.GroupVersionKind    { return u.a.Kind }
func (u *upstreamAttributes) GetUserInfo() user.Info              { return userInfo(u.a.User) }
func (u *upstreamAttributes) AddAnnotation(key, value string) error {
	u.a.AddAnnotation(key, value)
	return nil
}
func (u *upstreamAttributes) AddAnnotationWithLevel(key, value string, _ auditinternal.Level) error {
	return u.AddAnnotation(key, value)
}
func (u *upstreamAttributes) GetReinvocationContext() upstreamadmission.ReinvocationContext {
	return nil
}

func userInfo(u *auth.User) user.Info {
	if u == nil {
		return &user.DefaultInfo{}
	}
	return &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// Authorizer lets CEL's authorizer variable ask the server's authorizer.
func Authorizer(a auth.Authorizer) conditionAuthorizer { return admission.UpstreamAuthorizer(a) }

// noAuthorizer answers CEL's authorizer when the plugins were given none.
type noAuthorizer struct{}

func (noAuthorizer) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "", errors.New("no authorizer is configured for admission webhooks' matchConditions")
}
