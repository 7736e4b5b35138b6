package server

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Authorization of the agent API, as upstream's kubelet in its Webhook
// authorization mode: the caller is the subject of its verified client
// certificate (CN the user, O the groups) or, without one, the user a
// TokenReview of its bearer token names; the API server then decides with
// a SubjectAccessReview on the node's `nodes` subresource the path maps to
// (Attributes). Answers are cached: allowed for 5 minutes, denied for 30
// seconds, tokens for 2 minutes (upstream's defaults).

// Cache lifetimes, upstream's kubelet defaults.
const (
	AllowedTTL = 5 * time.Minute
	DeniedTTL  = 30 * time.Second
	TokenTTL   = 2 * time.Minute
)

// Identity is an authenticated caller.
type Identity struct {
	User   string
	UID    string
	Groups []string
	Extra  map[string]authorizationv1.ExtraValue
}

// RequestAttributes are what one request to the agent API asks: verb on
// nodes/<Subresources[i]> named Node. Access to any one of Subresources is
// enough (upstream's fine-grained subresources fall back to proxy).
type RequestAttributes struct {
	Verb         string
	Node         string
	Subresources []string
}

// isSubpath reports whether path is prefix or below it.
func isSubpath(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// streamingPaths run commands or open ports in containers.
var streamingPaths = []string{"/exec", "/attach", "/portForward", "/run"}

// Attributes maps a request to the authorization it needs, as upstream's
// kubelet does: the verb from the HTTP method (GET get, POST create, PUT
// update, PATCH patch, DELETE delete); the subresource from the path:
// /stats stats, /metrics metrics, /logs log, /checkpoint checkpoint, /pods
// and /runningpods pods then proxy, /healthz healthz then proxy,
// /configz configz then proxy, anything else proxy.
//
// One difference: the streaming endpoints (/exec, /attach, /portForward,
// /run) need create whatever the method, so that a WebSocket upgrade (a
// GET) cannot run commands with only get access to nodes/proxy; the API
// server likewise asks for create on pods/exec for WebSocket upgrades
// (upstream's AuthorizePodWebsocketUpgradeCreatePermission).
func Attributes(node string, r *http.Request) RequestAttributes {
	verb := ""
	switch r.Method {
	case http.MethodGet:
		verb = "get"
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	p := r.URL.Path
	var subs []string
	switch {
	case isSubpath(p, "/pods"), isSubpath(p, "/runningpods"):
		subs = append(subs, "pods")
	case isSubpath(p, "/healthz"):
		subs = append(subs, "healthz")
	case isSubpath(p, "/configz"):
		subs = append(subs, "configz")
	}
	switch {
	case isSubpath(p, "/stats"):
		subs = append(subs, "stats")
	case isSubpath(p, "/metrics"):
		subs = append(subs, "metrics")
	case isSubpath(p, "/logs"):
		subs = append(subs, "log")
	case isSubpath(p, "/checkpoint"):
		subs = append(subs, "checkpoint")
	default:
		subs = append(subs, "proxy")
	}
	if slices.ContainsFunc(streamingPaths, func(s string) bool { return isSubpath(p, s) }) {
		verb = "create"
	}
	return RequestAttributes{Verb: verb, Node: node, Subresources: subs}
}

// Authorizer answers whether an identity may do what attrs ask, for one
// subresource.
type Authorizer interface {
	Allowed(ctx context.Context, id Identity, verb, node, subresource string) (bool, error)
}

// TokenAuthenticator names the user of a bearer token (ok false: the token
// is not valid).
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (id Identity, ok bool, err error)
}

// Auth guards an agent API handler.
type Auth struct {
	// NodeName is the agent's Node: the name in every access review.
	NodeName string
	// Authorizer decides (a SubjectAccessReview, cached: NewReviewer).
	Authorizer Authorizer
	// Tokens authenticate bearer tokens; nil: only client certificates.
	Tokens TokenAuthenticator
}

// Wrap answers 401 to requests without an identity and 403 to those the
// authorizer does not allow; it passes the others to h.
func (a *Auth) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok, err := a.identify(r)
		if err != nil {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := Attributes(a.NodeName, r)
		for _, sub := range attrs.Subresources {
			allowed, err := a.Authorizer.Allowed(r.Context(), id, attrs.Verb, attrs.Node, sub)
			if err != nil {
				http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s)", id.User, attrs.Verb, sub), http.StatusInternalServerError)
				return
			}
			if allowed {
				h.ServeHTTP(w, r)
				return
			}
		}
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=%v)", id.User, attrs.Verb, attrs.Subresources), http.StatusForbidden)
	})
}

// identify takes the caller from its verified client certificate, else
// from its bearer token.
func (a *Auth) identify(r *http.Request) (Identity, bool, error) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		c := r.TLS.VerifiedChains[0][0]
		if c.Subject.CommonName == "" {
			return Identity{}, false, nil
		}
		return Identity{User: c.Subject.CommonName, Groups: append([]string{}, c.Subject.Organization...)}, true, nil
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	token = strings.TrimSpace(token)
	if !ok || token == "" || a.Tokens == nil {
		return Identity{}, false, nil
	}
	return a.Tokens.AuthenticateToken(r.Context(), token)
}

// ttlCache keeps answers until they expire; it holds at most maxEntries
// (expired entries are dropped first, then everything, when full).
type ttlCache[V any] struct {
	mu      sync.Mutex
	entries map[string]ttlEntry[V]
	now     func() time.Time
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

const maxEntries = 4096

func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.clock().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[V]) put(key string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	if c.entries == nil {
		c.entries = map[string]ttlEntry[V]{}
	}
	if len(c.entries) >= maxEntries {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxEntries {
			clear(c.entries)
		}
	}
	c.entries[key] = ttlEntry[V]{v: v, expires: now.Add(ttl)}
}

func (c *ttlCache[V]) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// CachedAuthorizer remembers another Authorizer's answers: allowed for
// AllowedTTL, denied for DeniedTTL; errors are not kept.
type CachedAuthorizer struct {
	Next  Authorizer
	cache ttlCache[bool]
}

func (c *CachedAuthorizer) Allowed(ctx context.Context, id Identity, verb, node, sub string) (bool, error) {
	groups := slices.Clone(id.Groups)
	slices.Sort(groups)
	key := strings.Join([]string{id.User, id.UID, strings.Join(groups, ","), fmt.Sprint(id.Extra), verb, node, sub}, "\x00")
	if v, ok := c.cache.get(key); ok {
		return v, nil
	}
	v, err := c.Next.Allowed(ctx, id, verb, node, sub)
	if err != nil {
		return false, err
	}
	ttl := DeniedTTL
	if v {
		ttl = AllowedTTL
	}
	c.cache.put(key, v, ttl)
	return v, nil
}

// Reviewer asks the API server: SubjectAccessReviews for authorization,
// TokenReviews for bearer tokens.
type Reviewer struct {
	Client kubernetes.Interface
}

// NewAuth is the agent API's guard for node: access reviews and token
// reviews through cs, cached.
func NewAuth(node string, cs kubernetes.Interface) *Auth {
	r := Reviewer{Client: cs}
	return &Auth{NodeName: node, Authorizer: &CachedAuthorizer{Next: r}, Tokens: &CachedTokens{Next: r}}
}

func (r Reviewer) Allowed(ctx context.Context, id Identity, verb, node, sub string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: id.User, UID: id.UID, Groups: id.Groups, Extra: id.Extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Version: "v1", Resource: "nodes", Subresource: sub, Name: node},
	}}
	out, err := r.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	if out.Status.EvaluationError != "" && !out.Status.Allowed {
		return false, fmt.Errorf("access review: %s", out.Status.EvaluationError)
	}
	return out.Status.Allowed && !out.Status.Denied, nil
}

func (r Reviewer) AuthenticateToken(ctx context.Context, token string) (Identity, bool, error) {
	out, err := r.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return Identity{}, false, err
	}
	if !out.Status.Authenticated {
		return Identity{}, false, nil
	}
	u := out.Status.User
	id := Identity{User: u.Username, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		id.Extra = map[string]authorizationv1.ExtraValue{}
		for k, v := range u.Extra {
			id.Extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	return id, true, nil
}

// CachedTokens remembers token reviews, keyed by the token's SHA-256:
// valid tokens for TokenTTL, invalid ones for DeniedTTL; errors are not
// kept.
type CachedTokens struct {
	Next  TokenAuthenticator
	cache ttlCache[*Identity]
}

func (c *CachedTokens) AuthenticateToken(ctx context.Context, token string) (Identity, bool, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if id, ok := c.cache.get(key); ok {
		if id == nil {
			return Identity{}, false, nil
		}
		return *id, true, nil
	}
	id, ok, err := c.Next.AuthenticateToken(ctx, token)
	if err != nil {
		return Identity{}, false, err
	}
	if ok {
		c.cache.put(key, &id, TokenTTL)
	} else {
		c.cache.put(key, nil, DeniedTTL)
	}
	return id, ok, nil
}
