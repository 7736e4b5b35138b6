package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAttributes(t *testing.T) {
	cases := []struct {
		method, path string
		verb         string
		subs         []string
	}{
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/stats", "get", []string{"stats"}},
		{"GET", "/statsfoo", "get", []string{"proxy"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/resource", "get", []string{"metrics"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/spec/", "get", []string{"proxy"}},
		{"GET", "/containerLogs/ns/p/c", "get", []string{"proxy"}},
		{"PUT", "/foo", "update", []string{"proxy"}},
		{"PATCH", "/foo", "patch", []string{"proxy"}},
		{"DELETE", "/foo", "delete", []string{"proxy"}},
		{"POST", "/checkpoint/ns/p/c", "create", []string{"checkpoint"}},
		// Streaming endpoints need create, even on a WebSocket GET.
		{"POST", "/exec/ns/p/c", "create", []string{"proxy"}},
		{"GET", "/exec/ns/p/c", "create", []string{"proxy"}},
		{"GET", "/attach/ns/p/c", "create", []string{"proxy"}},
		{"GET", "/portForward/ns/p", "create", []string{"proxy"}},
		{"POST", "/run/ns/p/c", "create", []string{"proxy"}},
		{"GET", "/executive", "get", []string{"proxy"}},
	}
	for _, c := range cases {
		a := Attributes("n1", httptest.NewRequest(c.method, c.path, nil))
		if a.Verb != c.verb || !slices.Equal(a.Subresources, c.subs) || a.Node != "n1" {
			t.Errorf("%s %s: %+v, want %s %v", c.method, c.path, a, c.verb, c.subs)
		}
	}
}

// countingAuthorizer allows what allow says and counts its calls.
type countingAuthorizer struct {
	allow func(id Identity, verb, sub string) bool
	calls int
	err   error
}

func (c *countingAuthorizer) Allowed(_ context.Context, id Identity, verb, node, sub string) (bool, error) {
	c.calls++
	if c.err != nil {
		return false, c.err
	}
	return c.allow(id, verb, sub), nil
}

func TestCachedAuthorizer(t *testing.T) {
	now := time.Unix(1000, 0)
	next := &countingAuthorizer{allow: func(id Identity, verb, sub string) bool { return id.User == "admin" }}
	c := &CachedAuthorizer{Next: next}
	c.cache.now = func() time.Time { return now }
	ctx := context.Background()
	ask := func(user string) bool {
		ok, err := c.Allowed(ctx, Identity{User: user}, "get", "n1", "proxy")
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !ask("admin") || ask("eve") || next.calls != 2 {
		t.Fatalf("first answers: calls %d", next.calls)
	}
	now = now.Add(29 * time.Second)
	if !ask("admin") || ask("eve") || next.calls != 2 {
		t.Fatalf("within 30s both are cached: calls %d", next.calls)
	}
	now = now.Add(2 * time.Second) // 31s: the denial expired
	if ask("eve") || next.calls != 3 || !ask("admin") || next.calls != 3 {
		t.Fatalf("after 31s only the denial is asked again: calls %d", next.calls)
	}
	now = now.Add(5 * time.Minute) // the allowance expired
	if !ask("admin") || next.calls != 4 {
		t.Fatalf("after 5m the allowance is asked again: calls %d", next.calls)
	}
	// Other groups, verbs or subresources are other questions.
	c.Allowed(ctx, Identity{User: "admin", Groups: []string{"g"}}, "get", "n1", "proxy")
	c.Allowed(ctx, Identity{User: "admin"}, "create", "n1", "proxy")
	c.Allowed(ctx, Identity{User: "admin"}, "get", "n1", "stats")
	if next.calls != 7 {
		t.Fatalf("distinct questions: calls %d", next.calls)
	}
	// Errors are not cached.
	next.err = errors.New("down")
	if _, err := c.Allowed(ctx, Identity{User: "x"}, "get", "n1", "proxy"); err == nil {
		t.Fatal("error not returned")
	}
	next.err = nil
	if ask("x") || next.calls != 9 {
		t.Fatalf("after an error: calls %d", next.calls)
	}
}

type fakeTokens struct{ calls int }

func (f *fakeTokens) AuthenticateToken(_ context.Context, token string) (Identity, bool, error) {
	f.calls++
	if token == "good" {
		return Identity{User: "system:serviceaccount:ns:sa", Groups: []string{"system:serviceaccounts"}}, true, nil
	}
	return Identity{}, false, nil
}

func TestAuthWrap(t *testing.T) {
	authz := &countingAuthorizer{allow: func(id Identity, verb, sub string) bool {
		return id.User == "system:serviceaccount:ns:sa" && verb == "get" && sub == "proxy"
	}}
	tokens := &fakeTokens{}
	a := &Auth{NodeName: "n1", Authorizer: authz, Tokens: &CachedTokens{Next: tokens}}
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("served")) }))
	do := func(method, path, token string) (int, string) {
		r := httptest.NewRequest(method, path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code, rec.Body.String()
	}
	if code, body := do("GET", "/pods", ""); code != 401 || !strings.Contains(body, "Unauthorized") {
		t.Errorf("no identity: %d %q", code, body)
	}
	if code, _ := do("GET", "/pods", "bad"); code != 401 {
		t.Errorf("bad token: %d", code)
	}
	// /pods: pods is refused, proxy allowed.
	if code, body := do("GET", "/pods", "good"); code != 200 || body != "served" {
		t.Errorf("allowed: %d %q", code, body)
	}
	code, body := do("GET", "/exec/ns/p/c?command=id", "good")
	want := "Forbidden (user=system:serviceaccount:ns:sa, verb=create, resource=nodes, subresource(s)=[proxy])"
	if code != 403 || strings.TrimSpace(body) != want {
		t.Errorf("websocket exec with get only: %d %q", code, body)
	}
	code, body = do("GET", "/healthz", "bad")
	if code != 401 {
		t.Errorf("bad token on healthz: %d %q", code, body)
	}
	if tokens.calls != 2 {
		t.Errorf("token reviews are cached: %d calls", tokens.calls)
	}
	code, body = do("GET", "/metrics", "good")
	if code != 403 || !strings.Contains(body, "subresource(s)=[metrics]") {
		t.Errorf("metrics: %d %q", code, body)
	}
	authz.err = errors.New("API server down")
	if code, _ := do("GET", "/stats/summary", "good"); code != 500 {
		t.Errorf("authorizer error: %d", code)
	}
}
