package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// objects is an ObjectReader over a map keyed by resource/namespace/name.
type objects map[string]runtime.Object

func (o objects) Get(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	if obj, ok := o[gvr.Resource+"/"+ns+"/"+name]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func TestServiceAccountTokens(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, key := range []crypto.Signer{ec, rsaKey} {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", UID: "sa-uid"}}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "node-uid"}}
		objs := objects{"serviceaccounts/ns/sa": sa, "nodes//n": node}
		tokens, err := NewServiceAccountTokens(key, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		tokens.Objects = objs
		now := time.Now()
		tokens.Now = func() time.Time { return now }
		token, claims, err := tokens.Issue(TokenSpec{ServiceAccount: sa, Node: node, Audiences: []string{DefaultServiceAccountIssuer, "x"}, ExpirationSeconds: 600}, now)
		if err != nil {
			t.Fatal(err)
		}
		authn := func(token string) (*User, bool, error) {
			r, _ := http.NewRequest("GET", "/", nil)
			r.Header.Set("Authorization", "Bearer "+token)
			return tokens.Authenticate(r)
		}
		u, ok, err := authn(token)
		if err != nil || !ok {
			t.Fatalf("%T: %v %v", key, ok, err)
		}
		if u.Name != "system:serviceaccount:ns:sa" || u.Extra["authentication.kubernetes.io/node-name"][0] != "n" ||
			u.Extra["authentication.kubernetes.io/node-uid"][0] != "node-uid" || len(u.Audiences) != 1 {
			t.Errorf("%T: user %+v", key, u)
		}
		if claims.Expiry-claims.IssuedAt != 600 {
			t.Errorf("exp-iat %d", claims.Expiry-claims.IssuedAt)
		}
		// Not ours: left to other authenticators.
		for _, other := range []string{"abcdef.0123456789abcdef", "not-a-token"} {
			if _, ok, err := authn(other); ok || err != nil {
				t.Errorf("%q: %v %v, want not recognised", other, ok, err)
			}
		}
		// Time: a minute of leeway, then expired.
		now = now.Add(10*time.Minute + 30*time.Second)
		if _, ok, err := authn(token); !ok {
			t.Errorf("within the leeway: %v", err)
		}
		now = now.Add(time.Minute)
		if _, _, err := authn(token); err == nil || err.Error() != "service account token has expired" {
			t.Errorf("expired: %v", err)
		}
		now = now.Add(-time.Hour)
		if _, _, err := authn(token); err == nil || err.Error() != "service account token is not valid yet" {
			t.Errorf("not yet valid: %v", err)
		}
		now = now.Add(time.Hour - 11*time.Minute)
		// The node bound is replaced: the token no longer works.
		objs["nodes//n"] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "other"}}
		if _, _, err := authn(token); err == nil || !strings.Contains(err.Error(), "node UID (other) does not match") {
			t.Errorf("node replaced: %v", err)
		}
		delete(objs, "nodes//n")
		if _, _, err := authn(token); err == nil || err.Error() != "service account token has been invalidated" {
			t.Errorf("node deleted: %v", err)
		}
		// Another key's signature does not verify.
		otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		forger, _ := NewServiceAccountTokens(otherKey, "", nil)
		forged, _, _ := forger.Issue(TokenSpec{ServiceAccount: sa, Audiences: []string{DefaultServiceAccountIssuer}, ExpirationSeconds: 600}, now)
		if _, ok, err := authn(forged); ok || err == nil {
			t.Errorf("forged: %v %v", ok, err)
		}
	}
}
