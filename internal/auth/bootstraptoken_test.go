package auth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNewBootstrapToken(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		tok, err := NewBootstrapToken()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := ParseBootstrapToken(tok); !ok {
			t.Fatalf("token %q is not in the bootstrap format", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q made twice", tok)
		}
		seen[tok] = true
	}
}

func TestBootstrapTokenAuthenticator(t *testing.T) {
	const token = "abcdef.0123456789abcdef"
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	valid := func() *corev1.Secret {
		s, err := BootstrapTokenSecret(token, "test", []string{"system:bootstrappers:plainkube"}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name       string
		header     string
		secret     func() *corev1.Secret
		getErr     error
		wantUser   string
		wantGroups []string
		wantErr    bool
	}{
		{name: "valid", header: "Bearer " + token, secret: valid, wantUser: "system:bootstrap:abcdef",
			wantGroups: []string{"system:bootstrappers", "system:bootstrappers:plainkube", "system:authenticated"}},
		{name: "not yet expired", header: "Bearer " + token, secret: func() *corev1.Secret {
			s := valid()
			s.Data[BootstrapTokenExpirationKey] = []byte(now.Add(time.Minute).Format(time.RFC3339))
			return s
		}, wantUser: "system:bootstrap:abcdef", wantGroups: []string{"system:bootstrappers", "system:bootstrappers:plainkube", "system:authenticated"}},
		{name: "expired", header: "Bearer " + token, secret: func() *corev1.Secret {
			s := valid()
			s.Data[BootstrapTokenExpirationKey] = []byte(now.Add(-time.Second).Format(time.RFC3339))
			return s
		}},
		{name: "wrong secret", header: "Bearer abcdef.0123456789abcdee", secret: valid},
		{name: "no secret", header: "Bearer " + token, secret: func() *corev1.Secret { return nil }},
		{name: "not for authentication", header: "Bearer " + token, secret: func() *corev1.Secret {
			s := valid()
			delete(s.Data, BootstrapTokenUsageAuthentication)
			return s
		}},
		{name: "wrong type", header: "Bearer " + token, secret: func() *corev1.Secret {
			s := valid()
			s.Type = corev1.SecretTypeOpaque
			return s
		}},
		{name: "being deleted", header: "Bearer " + token, secret: func() *corev1.Secret {
			s := valid()
			s.DeletionTimestamp = &metav1.Time{Time: now}
			return s
		}},
		{name: "bad extra group", header: "Bearer " + token, secret: func() *corev1.Secret {
			s := valid()
			s.Data[BootstrapTokenExtraGroupsKey] = []byte("system:masters")
			return s
		}},
		{name: "id mismatch", header: "Bearer " + token, secret: func() *corev1.Secret {
			s := valid()
			s.Data[BootstrapTokenIDKey] = []byte("zzzzzz")
			return s
		}},
		{name: "not a bootstrap token", header: "Bearer some.jwt.token", secret: valid},
		{name: "no bearer token", header: "Basic abc", secret: valid},
		{name: "storage error", header: "Bearer " + token, secret: valid, getErr: errors.New("etcd down"), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked string
			a := &BootstrapTokenAuthenticator{Now: func() time.Time { return now }, Get: func(_ context.Context, name string) (*corev1.Secret, error) {
				asked = name
				if tc.getErr != nil {
					return nil, tc.getErr
				}
				return tc.secret(), nil
			}}
			r, _ := http.NewRequest("GET", "/api", nil)
			r.Header.Set("Authorization", tc.header)
			u, ok, err := a.Authenticate(r)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantUser == "" {
				if ok || u != nil {
					t.Fatalf("authenticated as %+v, want not recognised", u)
				}
				return
			}
			if !ok || u.Name != tc.wantUser || !slices.Equal(u.Groups, tc.wantGroups) {
				t.Fatalf("got %+v ok=%v, want %s %v", u, ok, tc.wantUser, tc.wantGroups)
			}
			if asked != "bootstrap-token-abcdef" {
				t.Fatalf("read secret %q", asked)
			}
		})
	}
}
