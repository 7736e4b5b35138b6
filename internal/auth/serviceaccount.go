package auth

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	saauth "k8s.io/apiserver/pkg/authentication/serviceaccount"
	jwtauth "k8s.io/apiserver/pkg/authentication/token/jwt"
)

// DefaultServiceAccountIssuer is the issuer (and default audience) of
// service-account tokens when none is configured, as upstream's.
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// Upstream's constants for tokens mounted by the ServiceAccount admission
// plugin: they ask for 3607 s, which (when extension is on) is issued as a
// year-long token that is only "stale" after 3607 s.
const (
	WarnOnlyBoundTokenExpirationSeconds = 60*60 + 7
	ExpirationExtensionSeconds          = 24 * 365 * 60 * 60
)

// tokenLeeway is the clock skew tolerated on exp and nbf, and how long a
// bound object may have been marked deleted before its tokens stop working
// (go-jose's DefaultLeeway, which upstream uses).
const tokenLeeway = time.Minute

// ObjectReader reads API objects. The API server implements it over its
// own storage; the service-account token code reads service accounts and
// the pods, secrets and nodes that tokens are bound to through it.
type ObjectReader interface {
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
}

var (
	serviceAccountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	podsGVR            = corev1.SchemeGroupVersion.WithResource("pods")
	secretsGVR         = corev1.SchemeGroupVersion.WithResource("secrets")
	nodesGVR           = corev1.SchemeGroupVersion.WithResource("nodes")
)

// ServiceAccountTokens issues and authenticates service-account tokens:
// JWTs signed with the cluster's service-account key, naming a service
// account and optionally the pod, secret or node they are bound to. It is
// an Authenticator of bearer tokens with its issuer; tokens of other
// issuers, and bearer tokens that are not JWTs, it leaves to others.
type ServiceAccountTokens struct {
	// Issuer is the iss claim of tokens issued and accepted.
	Issuer string
	// Audiences are the API server's own: the default aud of tokens, and
	// what a token must be for to authenticate a request to the API server.
	Audiences []string
	// Objects reads service accounts and bound objects (the API server
	// sets it to its storage when it is nil).
	Objects ObjectReader
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	key crypto.Signer
	kid string
	jwk JSONWebKey
}

// NewServiceAccountTokens signs with key (ECDSA P-256 or RSA). An empty
// issuer is DefaultServiceAccountIssuer; no audiences means [issuer].
func NewServiceAccountTokens(key crypto.Signer, issuer string, audiences []string) (*ServiceAccountTokens, error) {
	if issuer == "" {
		issuer = DefaultServiceAccountIssuer
	}
	if len(audiences) == 0 {
		audiences = []string{issuer}
	}
	jwk, err := publicJWK(key.Public())
	if err != nil {
		return nil, err
	}
	return &ServiceAccountTokens{Issuer: issuer, Audiences: audiences, key: key, kid: jwk.Kid, jwk: jwk}, nil
}

func (t *ServiceAccountTokens) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// ref names an object a token refers to.
type ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// kubernetesClaims is the private "kubernetes.io" claim.
type kubernetesClaims struct {
	Namespace      string `json:"namespace,omitempty"`
	Node           *ref   `json:"node,omitempty"`
	Pod            *ref   `json:"pod,omitempty"`
	Secret         *ref   `json:"secret,omitempty"`
	ServiceAccount ref    `json:"serviceaccount,omitempty"`
	WarnAfter      int64  `json:"warnafter,omitempty"`
}

// audience is the aud claim: a list, though a single string is accepted.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = audience{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(a))
}

// TokenClaims are a service-account token's claims, in upstream's order.
type TokenClaims struct {
	Audience   audience          `json:"aud"`
	Expiry     int64             `json:"exp"`
	IssuedAt   int64             `json:"iat"`
	Issuer     string            `json:"iss"`
	ID         string            `json:"jti,omitempty"`
	Kubernetes *kubernetesClaims `json:"kubernetes.io,omitempty"`
	NotBefore  int64             `json:"nbf"`
	Subject    string            `json:"sub"`
}

// TokenSpec is what to issue a token for: a service account, bound to at
// most one of a pod (which may come with the node it runs on), a secret or
// a node.
type TokenSpec struct {
	ServiceAccount *corev1.ServiceAccount
	Pod            *corev1.Pod
	Secret         *corev1.Secret
	Node           *corev1.Node
	Audiences      []string
	// ExpirationSeconds is the token's lifetime.
	ExpirationSeconds int64
	// WarnAfterSeconds, if set, is recorded as kubernetes.io.warnafter.
	WarnAfterSeconds int64
}

// Issue signs a token for spec, issued at now. It returns the token and
// its claims (ID is the jti, a fresh UUID).
func (t *ServiceAccountTokens) Issue(spec TokenSpec, now time.Time) (string, *TokenClaims, error) {
	sa := spec.ServiceAccount
	if spec.Secret != nil && (spec.Pod != nil || spec.Node != nil) {
		return "", nil, errors.New("internal error, token can only be bound to one object type")
	}
	c := &TokenClaims{
		Audience:  spec.Audiences,
		Expiry:    now.Add(time.Duration(spec.ExpirationSeconds) * time.Second).Unix(),
		IssuedAt:  now.Unix(),
		Issuer:    t.Issuer,
		ID:        string(uuid.NewUUID()),
		NotBefore: now.Unix(),
		Subject:   saauth.MakeUsername(sa.Namespace, sa.Name),
		Kubernetes: &kubernetesClaims{
			Namespace:      sa.Namespace,
			ServiceAccount: ref{Name: sa.Name, UID: string(sa.UID)},
		},
	}
	k := c.Kubernetes
	if spec.Pod != nil {
		k.Pod = &ref{Name: spec.Pod.Name, UID: string(spec.Pod.UID)}
	}
	if spec.Secret != nil {
		k.Secret = &ref{Name: spec.Secret.Name, UID: string(spec.Secret.UID)}
	}
	if spec.Node != nil {
		k.Node = &ref{Name: spec.Node.Name, UID: string(spec.Node.UID)}
	}
	if spec.WarnAfterSeconds != 0 {
		k.WarnAfter = now.Add(time.Duration(spec.WarnAfterSeconds) * time.Second).Unix()
	}
	token, err := signJWT(t.key, t.kid, c)
	if err != nil {
		return "", nil, err
	}
	return token, c, nil
}

// IsAPIAudiences reports whether auds are all among the API server's own
// audiences (upstream extends the expiry of such pod-bound tokens only).
func (t *ServiceAccountTokens) IsAPIAudiences(auds []string) bool {
	for _, a := range auds {
		if !slices.Contains(t.Audiences, a) {
			return false
		}
	}
	return len(auds) > 0
}

type audiencesKey struct{}

// WithAudiences returns ctx asking authenticators for a credential meant
// for auds (a TokenReview's spec.audiences) instead of the API server.
func WithAudiences(ctx context.Context, auds []string) context.Context {
	return context.WithValue(ctx, audiencesKey{}, auds)
}

// AudiencesFrom returns the audiences set by WithAudiences, or nil.
func AudiencesFrom(ctx context.Context) []string {
	a, _ := ctx.Value(audiencesKey{}).([]string)
	return a
}

// Authenticate takes the user from a bearer service-account token of this
// issuer (see AuthenticateToken).
func (t *ServiceAccountTokens) Authenticate(r *http.Request) (*User, bool, error) {
	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found || token == "" {
		return nil, false, nil
	}
	return t.AuthenticateToken(r.Context(), token)
}

// AuthenticateToken checks a token as upstream's service-account
// authenticator does: ok is false, with no error, for what is not a JWT of
// this issuer; otherwise the signature, the audience (the API server's, or
// those of WithAudiences), exp and nbf, and that the service account and
// any bound pod, secret or node still exist with the UIDs in the token.
// The user is system:serviceaccount:NS:NAME in the groups
// system:serviceaccounts, system:serviceaccounts:NS and
// system:authenticated, with the pod, node and credential id as extras;
// its Audiences are those the token was accepted for.
func (t *ServiceAccountTokens) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	p, ok := parseJWT(token)
	if !ok {
		return nil, false, nil
	}
	var c TokenClaims
	if json.Unmarshal(p.payload, &c) != nil || c.Issuer != t.Issuer {
		return nil, false, nil
	}
	if err := p.verify(t.key.Public()); err != nil {
		return nil, false, err
	}
	want := AudiencesFrom(ctx)
	if len(want) == 0 {
		want = t.Audiences
	}
	var auds []string
	for _, a := range c.Audience {
		if slices.Contains(want, a) && !slices.Contains(auds, a) {
			auds = append(auds, a)
		}
	}
	if len(auds) == 0 {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(c.Audience), want)
	}
	info, err := t.validate(ctx, &c)
	if err != nil {
		return nil, false, err
	}
	ui := info.UserInfo()
	u := &User{Name: ui.GetName(), UID: ui.GetUID(), Groups: append(ui.GetGroups(), GroupAuthenticated), Extra: ui.GetExtra(), Audiences: auds}
	return u, true, nil
}

// validate checks the time claims and that the objects named still exist.
func (t *ServiceAccountTokens) validate(ctx context.Context, c *TokenClaims) (*saauth.ServiceAccountInfo, error) {
	now := t.now()
	if c.Expiry != 0 && now.Add(-tokenLeeway).After(time.Unix(c.Expiry, 0)) {
		return nil, errors.New("service account token has expired")
	}
	if c.NotBefore != 0 && now.Add(tokenLeeway).Before(time.Unix(c.NotBefore, 0)) {
		return nil, errors.New("service account token is not valid yet")
	}
	k := c.Kubernetes
	if k == nil {
		return nil, errors.New("service account token claims could not be validated due to unexpected private claim")
	}
	if t.Objects == nil {
		return nil, errors.New("service account tokens cannot be validated: no object reader")
	}
	invalidIfDeletedBefore := now.Add(-tokenLeeway)
	deleted := func(m metav1.Object) bool {
		d := m.GetDeletionTimestamp()
		return d != nil && d.Time.Before(invalidIfDeletedBefore)
	}
	ns := k.Namespace
	obj, err := t.Objects.Get(ctx, serviceAccountsGVR, ns, k.ServiceAccount.Name)
	if err != nil {
		return nil, err
	}
	sa := obj.(*corev1.ServiceAccount)
	if deleted(sa) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", ns, k.ServiceAccount.Name)
	}
	if string(sa.UID) != k.ServiceAccount.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, k.ServiceAccount.UID)
	}
	invalidated := errors.New("service account token has been invalidated")
	if k.Secret != nil {
		obj, err := t.Objects.Get(ctx, secretsGVR, ns, k.Secret.Name)
		if err != nil {
			return nil, invalidated
		}
		s := obj.(*corev1.Secret)
		if deleted(s) {
			return nil, invalidated
		}
		if string(s.UID) != k.Secret.UID {
			return nil, fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", s.UID, k.Secret.UID)
		}
	}
	info := &saauth.ServiceAccountInfo{Namespace: ns, Name: k.ServiceAccount.Name, UID: k.ServiceAccount.UID}
	if k.Pod != nil {
		obj, err := t.Objects.Get(ctx, podsGVR, ns, k.Pod.Name)
		if err != nil {
			return nil, invalidated
		}
		pod := obj.(*corev1.Pod)
		if deleted(pod) {
			return nil, invalidated
		}
		if string(pod.UID) != k.Pod.UID {
			return nil, fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", pod.UID, k.Pod.UID)
		}
		info.PodName, info.PodUID = k.Pod.Name, k.Pod.UID
	}
	if k.Node != nil {
		// A pod-bound token only records the pod's node; a node-bound one
		// lives as long as the node.
		if k.Pod == nil {
			obj, err := t.Objects.Get(ctx, nodesGVR, "", k.Node.Name)
			if err != nil {
				return nil, invalidated
			}
			node := obj.(*corev1.Node)
			if deleted(node) {
				return nil, invalidated
			}
			if string(node.UID) != k.Node.UID {
				return nil, fmt.Errorf("node UID (%s) does not match service account node ref claim (%s)", node.UID, k.Node.UID)
			}
		}
		info.NodeName, info.NodeUID = k.Node.Name, k.Node.UID
	}
	if c.ID != "" {
		info.CredentialID = jwtauth.CredentialIDForJTI(c.ID)
	}
	return info, nil
}

// OpenIDConfiguration is the body of /.well-known/openid-configuration, as
// upstream serves it; jwksURI is where the keys are published. ok is false
// when the issuer is not an https URL, for which upstream serves no
// discovery.
func (t *ServiceAccountTokens) OpenIDConfiguration(jwksURI string) (body []byte, ok bool) {
	u, err := url.Parse(t.Issuer)
	if err != nil || u.Scheme != "https" {
		return nil, false
	}
	body, _ = json.Marshal(struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}{t.Issuer, jwksURI, []string{"id_token"}, []string{"public"}, []string{t.jwk.Alg}})
	return body, true
}

// JWKS is the body of /openid/v1/jwks: the public signing key.
func (t *ServiceAccountTokens) JWKS() []byte {
	body, _ := json.Marshal(struct {
		Keys []JSONWebKey `json:"keys"`
	}{[]JSONWebKey{t.jwk}})
	return body
}
