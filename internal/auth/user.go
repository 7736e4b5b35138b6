package auth

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Well-known users and groups.
const (
	GroupMasters         = "system:masters"
	GroupAuthenticated   = "system:authenticated"
	GroupUnauthenticated = "system:unauthenticated"
	UserAnonymous        = "system:anonymous"
)

// User is an authenticated identity.
type User struct {
	Name   string
	UID    string
	Groups []string
	// Extra carries authenticator-specific attributes (e.g. the credential id).
	Extra map[string][]string
	// Audiences, set by audience-aware authenticators (service-account
	// tokens), are the audiences the credential was accepted for.
	Audiences []string
}

// InGroup reports whether u belongs to group g.
func (u *User) InGroup(g string) bool {
	for _, x := range u.Groups {
		if x == g {
			return true
		}
	}
	return false
}

type userKey struct{}

// WithUser returns ctx carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user in ctx, or nil.
func UserFrom(ctx context.Context) *User {
	u, _ := ctx.Value(userKey{}).(*User)
	return u
}

// Authenticator finds the user of a request. ok is false when the request
// carries no credential this authenticator understands; err is set when it
// carries one that is invalid.
type Authenticator interface {
	Authenticate(r *http.Request) (u *User, ok bool, err error)
}

// Union tries each authenticator in turn, as upstream's union does: the
// first that authenticates the request decides; if none does, the errors
// of those that rejected it are returned together.
type Union []Authenticator

func (a Union) Authenticate(r *http.Request) (*User, bool, error) {
	var errs []error
	for _, x := range a {
		u, ok, err := x.Authenticate(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return u, true, nil
		}
	}
	return nil, false, utilerrors.NewAggregate(errs)
}

// ClientCertAuthenticator takes the user from a verified TLS client
// certificate: CN is the name, each O a group. The TLS layer has already
// verified the chain against the cluster CA.
type ClientCertAuthenticator struct{}

func (ClientCertAuthenticator) Authenticate(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil, false, nil
	}
	cert := r.TLS.VerifiedChains[0][0]
	groups := append([]string(nil), cert.Subject.Organization...)
	groups = append(groups, GroupAuthenticated)
	return &User{Name: cert.Subject.CommonName, Groups: groups}, true, nil
}

// TokenAuthenticator maps static bearer tokens to users.
type TokenAuthenticator struct {
	Tokens map[string]*User
}

func (a *TokenAuthenticator) Authenticate(r *http.Request) (*User, bool, error) {
	h := r.Header.Get("Authorization")
	token, found := strings.CutPrefix(h, "Bearer ")
	if !found || token == "" {
		return nil, false, nil
	}
	for t, u := range a.Tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			return u, true, nil
		}
	}
	return nil, false, errInvalidToken
}

type authError string

func (e authError) Error() string { return string(e) }

const errInvalidToken = authError("invalid bearer token")

// UserInfo is u as the authentication API writes a user (a TokenReview's
// status, an audit Event).
func (u *User) UserInfo() authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return info
}
