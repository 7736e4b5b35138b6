package volumes

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Service account tokens of projected volumes, from the TokenRequest API
// (serviceaccounts/token), bound to the pod. As upstream's token manager,
// a token is kept and used again until 80% of its life has passed or it
// is 24 hours old (less a jitter of up to 10s); if a refresh fails the
// old token is used while it is valid.

const (
	tokenMaxTTL            = 24 * time.Hour
	tokenMaxJitter         = 10 * time.Second
	defaultTokenExpiration = 3600 // seconds, the API's default
)

type tokenKey struct {
	namespace, serviceAccount, audience string
	expirationSeconds                   int64
	podName                             string
	podUID                              types.UID
}

func (k tokenKey) String() string {
	return fmt.Sprintf("%q/%q/%q/%d/%s(%s)", k.namespace, k.serviceAccount, k.audience, k.expirationSeconds, k.podName, k.podUID)
}

type tokenCache struct {
	mu sync.Mutex
	m  map[tokenKey]*authenticationv1.TokenRequest
}

// token is a token for pod's service account as projection t asks for.
func (c *tokenCache) token(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, t *corev1.ServiceAccountTokenProjection, now time.Time) (string, error) {
	exp := int64(defaultTokenExpiration)
	if t.ExpirationSeconds != nil {
		exp = *t.ExpirationSeconds
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	key := tokenKey{pod.Namespace, sa, t.Audience, exp, pod.Name, pod.UID}
	c.mu.Lock()
	cached := c.m[key]
	c.mu.Unlock()
	if cached != nil && !tokenNeedsRefresh(cached, now) {
		return cached.Status.Token, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if t.Audience != "" {
		req.Spec.Audiences = []string{t.Audience}
	}
	tr, err := cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err == nil && (tr == nil || tr.Status.Token == "") {
		err = fmt.Errorf("the API server returned no token")
	}
	if err != nil {
		switch {
		case cached == nil:
			return "", fmt.Errorf("failed to fetch token: %w", err)
		case now.After(cached.Status.ExpirationTimestamp.Time):
			return "", fmt.Errorf("token %s expired and refresh failed: %w", key, err)
		}
		return cached.Status.Token, nil
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = &exp
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[tokenKey]*authenticationv1.TokenRequest{}
	}
	c.m[key] = tr
	c.mu.Unlock()
	return tr.Status.Token, nil
}

// tokenNeedsRefresh reports whether tr is older than 80% of its life or
// than 24 hours (each less a jitter), or has expired.
func tokenNeedsRefresh(tr *authenticationv1.TokenRequest, now time.Time) bool {
	exp := tr.Status.ExpirationTimestamp.Time
	if now.After(exp) {
		return true
	}
	if tr.Spec.ExpirationSeconds == nil {
		return false
	}
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	issued := exp.Add(-ttl)
	jitter := time.Duration(rand.Float64() * float64(tokenMaxJitter))
	return now.After(issued.Add(tokenMaxTTL-jitter)) || now.After(exp.Add(-ttl/5-jitter))
}

// forget drops the tokens of pod uid (live == nil) or of the pods not in
// live.
func (c *tokenCache) forget(uid types.UID, live map[types.UID]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if (live == nil && k.podUID == uid) || (live != nil && !live[k.podUID]) {
			delete(c.m, k)
		}
	}
}

// keys lists the cached tokens (for tests).
func (c *tokenCache) keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.m {
		out = append(out, k.String())
	}
	slices.Sort(out)
	return out
}
