package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Bootstrap tokens, as upstream's (kubeadm's) format: "<id>.<secret>",
// stored as a Secret "bootstrap-token-<id>" in kube-system.
const (
	// BootstrapUserPrefix + id is the user a bootstrap token authenticates as.
	BootstrapUserPrefix = "system:bootstrap:"
	// GroupBootstrappers holds every bootstrap-token user.
	GroupBootstrappers = "system:bootstrappers"
	// BootstrapTokenSecretPrefix + id names the token's Secret.
	BootstrapTokenSecretPrefix = "bootstrap-token-"
	// Keys of the token's Secret data.
	BootstrapTokenIDKey          = "token-id"
	BootstrapTokenSecretKey      = "token-secret"
	BootstrapTokenExpirationKey  = "expiration"
	BootstrapTokenDescriptionKey = "description"
	BootstrapTokenExtraGroupsKey = "auth-extra-groups"
	// BootstrapTokenUsageAuthentication must be "true" for the token to
	// authenticate requests.
	BootstrapTokenUsageAuthentication = "usage-bootstrap-authentication"
	BootstrapTokenUsageSigning        = "usage-bootstrap-signing"
)

var (
	bootstrapTokenRE      = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)
	bootstrapExtraGroupRE = regexp.MustCompile(`^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$`)
)

// ParseBootstrapToken splits a token "<id>.<secret>"; ok is false if it
// is not in that format.
func ParseBootstrapToken(token string) (id, secret string, ok bool) {
	m := bootstrapTokenRE.FindStringSubmatch(token)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// NewBootstrapToken returns a random token in the bootstrap format.
func NewBootstrapToken() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 22)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	out := make([]byte, 0, 23)
	for i, c := range b {
		if i == 6 {
			out = append(out, '.')
		}
		// 256 % 36 = 4: a negligible bias for a token that is also checked
		// against its Secret.
		out = append(out, alphabet[int(c)%len(alphabet)])
	}
	return string(out), nil
}

// BootstrapTokenSecret is the Secret that makes token valid for
// authentication, with extraGroups (each system:bootstrappers:…) added to
// its user's groups; a zero expires means it does not expire.
func BootstrapTokenSecret(token, description string, extraGroups []string, expires time.Time) (*corev1.Secret, error) {
	id, secret, ok := ParseBootstrapToken(token)
	if !ok {
		return nil, fmt.Errorf("bootstrap token %q is not of the form [a-z0-9]{6}.[a-z0-9]{16}", token)
	}
	data := map[string][]byte{
		BootstrapTokenIDKey:               []byte(id),
		BootstrapTokenSecretKey:           []byte(secret),
		BootstrapTokenUsageAuthentication: []byte("true"),
	}
	if description != "" {
		data[BootstrapTokenDescriptionKey] = []byte(description)
	}
	if len(extraGroups) > 0 {
		data[BootstrapTokenExtraGroupsKey] = []byte(strings.Join(extraGroups, ","))
	}
	if !expires.IsZero() {
		data[BootstrapTokenExpirationKey] = []byte(expires.UTC().Format(time.RFC3339))
	}
	s := &corev1.Secret{Type: corev1.SecretTypeBootstrapToken, Data: data}
	s.Name, s.Namespace = BootstrapTokenSecretPrefix+id, "kube-system"
	return s, nil
}

// SecretGetter reads a Secret in kube-system; it returns (nil, nil) when
// there is none of that name.
type SecretGetter func(ctx context.Context, name string) (*corev1.Secret, error)

// BootstrapTokenAuthenticator authenticates bearer tokens of the bootstrap
// format against their Secrets, as upstream's bootstrap token
// authenticator: the Secret must be of type bootstrap.kubernetes.io/token,
// not being deleted, hold the same id and secret, allow
// usage-bootstrap-authentication, and not have expired. The user is
// system:bootstrap:<id> in system:bootstrappers, the Secret's
// auth-extra-groups and system:authenticated.
//
// A token that is not of the bootstrap format, or does not validate, is
// not recognised (ok false, no error), so that other authenticators may
// try it; the reason is logged at debug level.
type BootstrapTokenAuthenticator struct {
	// Get reads Secrets (set before the server serves).
	Get SecretGetter
	// Now is the clock (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

func (a *BootstrapTokenAuthenticator) Authenticate(r *http.Request) (*User, bool, error) {
	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found {
		return nil, false, nil
	}
	id, secret, ok := ParseBootstrapToken(strings.TrimSpace(token))
	if !ok || a.Get == nil {
		return nil, false, nil
	}
	u, reason, err := a.validate(r.Context(), id, secret)
	if err != nil {
		return nil, false, err
	}
	if u == nil {
		log := a.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Debug("bootstrap token rejected", "tokenID", id, "reason", reason)
		return nil, false, nil
	}
	return u, true, nil
}

func (a *BootstrapTokenAuthenticator) validate(ctx context.Context, id, secret string) (*User, string, error) {
	s, err := a.Get(ctx, BootstrapTokenSecretPrefix+id)
	if err != nil {
		return nil, "", fmt.Errorf("reading bootstrap token: %w", err)
	}
	if s == nil {
		return nil, "no Secret " + BootstrapTokenSecretPrefix + id, nil
	}
	if s.DeletionTimestamp != nil {
		return nil, "its Secret is being deleted", nil
	}
	if s.Type != corev1.SecretTypeBootstrapToken {
		return nil, fmt.Sprintf("its Secret has type %q", s.Type), nil
	}
	if subtle.ConstantTimeCompare(s.Data[BootstrapTokenSecretKey], []byte(secret)) != 1 {
		return nil, "the token secret does not match", nil
	}
	if string(s.Data[BootstrapTokenIDKey]) != id {
		return nil, "the token id does not match", nil
	}
	if exp := string(s.Data[BootstrapTokenExpirationKey]); exp != "" {
		t, err := time.Parse(time.RFC3339, exp)
		if err != nil {
			return nil, "unparsable expiration " + exp, nil
		}
		now := time.Now
		if a.Now != nil {
			now = a.Now
		}
		if !now().Before(t) {
			return nil, "the token expired at " + exp, nil
		}
	}
	if string(s.Data[BootstrapTokenUsageAuthentication]) != "true" {
		return nil, "the token is not for authentication", nil
	}
	groups := []string{GroupBootstrappers}
	if extra := strings.TrimSpace(string(s.Data[BootstrapTokenExtraGroupsKey])); extra != "" {
		for _, g := range strings.Split(extra, ",") {
			g = strings.TrimSpace(g)
			if !bootstrapExtraGroupRE.MatchString(g) {
				return nil, fmt.Sprintf("extra group %q is not of the form system:bootstrappers:…", g), nil
			}
			if g != GroupBootstrappers {
				groups = append(groups, g)
			}
		}
	}
	groups = append(groups, GroupAuthenticated)
	return &User{Name: BootstrapUserPrefix + id, Groups: groups}, "", nil
}
