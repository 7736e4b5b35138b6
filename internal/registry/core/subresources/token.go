package subresources

import (
	"fmt"
	"math"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry"
)

var tokenRequestGVK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// Upstream's limits on a TokenRequest's spec.expirationSeconds.
const (
	defaultTokenExpirationSeconds = 60 * 60
	minTokenExpirationSeconds     = 10 * 60
)

// Token answers POST serviceaccounts/NAME/token as upstream's
// TokenREST does: it checks the service account and the object the token
// is to be bound to (a Pod, Secret or Node in the same namespace), and
// returns the TokenRequest with status.token signed by the cluster's
// service-account key. Nothing is stored. Audiences default to the API
// server's; no maximum lifetime is configured, so none is imposed; a
// pod-bound token for the API server asking for 3607 s (what the
// ServiceAccount admission plugin mounts) is issued for a year, with
// kubernetes.io.warnafter at 3607 s, as upstream's
// --service-account-extend-token-expiration (on by default) does.
var Token = registry.Handler{Serve: serveTokenRequest}

func serveTokenRequest(rq *registry.Request) error {
	if rq.Verb != "create" {
		return methodNotAllowed(rq)
	}
	issuer := rq.API.ServiceAccounts()
	if issuer == nil {
		return notImplemented("serviceaccounts/token: this API server has no service-account signing key")
	}
	ctx := rq.R.Context()
	body, err := rq.API.ReadBody()
	if err != nil {
		return err
	}
	obj, err := rq.API.Decode(body, tokenRequestGVK, &authenticationv1.TokenRequest{})
	if err != nil {
		return err
	}
	req, ok := obj.(*authenticationv1.TokenRequest)
	if !ok {
		return badRequest("expected a TokenRequest body, not %T", obj)
	}
	ns, name := rq.Namespace, rq.Name
	if req.Name != "" && req.Name != name {
		return apierrors.NewInvalid(tokenRequestGVK.GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != ns {
		return apierrors.NewInvalid(tokenRequestGVK.GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified")})
	}
	saObj, err := rq.API.Get(ctx, rq.Resource, ns, name)
	if err != nil {
		return err
	}
	sa := saObj.(*corev1.ServiceAccount)
	if req.Spec.ExpirationSeconds == nil {
		exp := int64(defaultTokenExpirationSeconds)
		req.Spec.ExpirationSeconds = &exp
	}
	req.Name, req.Namespace = sa.Name, sa.Namespace
	now := rq.API.Now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationv1.TokenRequestStatus{}
	if errs := validateTokenRequest(req); len(errs) > 0 {
		return apierrors.NewInvalid(tokenRequestGVK.GroupKind(), "", errs)
	}
	// Admission sees the audiences asked for, none meaning the API
	// server's, as upstream's mutating plugins see them: NodeRestriction
	// matches them against the audiences of the pod's token volumes
	// (none, for the kube-api-access volume).
	if err := rq.API.AdmitCreate(req); err != nil {
		return err
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = append([]string(nil), issuer.Audiences...)
	}

	spec := auth.TokenSpec{ServiceAccount: sa, Audiences: req.Spec.Audiences, ExpirationSeconds: *req.Spec.ExpirationSeconds}
	if ref := req.Spec.BoundObjectRef; ref != nil {
		if err := bindToken(rq, ref, &spec); err != nil {
			return err
		}
	}
	if spec.Pod != nil && spec.ExpirationSeconds == auth.WarnOnlyBoundTokenExpirationSeconds && issuer.IsAPIAudiences(spec.Audiences) {
		spec.WarnAfterSeconds = spec.ExpirationSeconds
		spec.ExpirationSeconds = auth.ExpirationExtensionSeconds
	}
	token, _, err := issuer.Issue(spec, now)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to generate token: %w", err))
	}
	req.Status = authenticationv1.TokenRequestStatus{
		Token:               token,
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second)),
	}
	req.SetGroupVersionKind(tokenRequestGVK)
	rq.API.WriteObject(http.StatusCreated, req)
	return nil
}

// validateTokenRequest is upstream's static validation of a TokenRequest.
func validateTokenRequest(req *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "expirationSeconds")
	exp := *req.Spec.ExpirationSeconds
	if exp < minTokenExpirationSeconds {
		errs = append(errs, field.Invalid(p, exp, "may not specify a duration less than 10 minutes"))
	}
	if exp > math.MaxUint32 {
		errs = append(errs, field.TooLong(p, exp, math.MaxUint32))
	}
	return errs
}

// bindToken looks up the object a token is to be bound to and records it
// in spec: a Pod (which must run as the service account; its node, when
// it has one that exists, is recorded too), a Secret or a Node.
func bindToken(rq *registry.Request, ref *authenticationv1.BoundObjectReference, spec *auth.TokenSpec) error {
	ctx := rq.R.Context()
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var uid types.UID
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		obj, err := rq.API.Get(ctx, corev1.SchemeGroupVersion.WithResource("pods"), rq.Namespace, ref.Name)
		if err != nil {
			return err
		}
		pod := obj.(*corev1.Pod)
		if pod.Spec.ServiceAccountName != rq.Name {
			return badRequest("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", rq.Name)
		}
		spec.Pod, uid = pod, pod.UID
		if pod.Spec.NodeName != "" {
			// A node that cannot be found is left out of the token.
			if obj, err := rq.API.Get(ctx, corev1.SchemeGroupVersion.WithResource("nodes"), "", pod.Spec.NodeName); err == nil {
				spec.Node = obj.(*corev1.Node)
			}
		}
	case gvk.Group == "" && gvk.Kind == "Node":
		obj, err := rq.API.Get(ctx, corev1.SchemeGroupVersion.WithResource("nodes"), "", ref.Name)
		if err != nil {
			return err
		}
		spec.Node = obj.(*corev1.Node)
		uid = spec.Node.UID
	case gvk.Group == "" && gvk.Kind == "Secret":
		obj, err := rq.API.Get(ctx, corev1.SchemeGroupVersion.WithResource("secrets"), rq.Namespace, ref.Name)
		if err != nil {
			return err
		}
		spec.Secret = obj.(*corev1.Secret)
		uid = spec.Secret.UID
	default:
		return badRequest("cannot bind token to object of type %s", gvk.String())
	}
	if ref.UID != "" && uid != ref.UID {
		return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return nil
}
