package apiserver

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry/all"
	"plainkube.dev/plainkube/internal/storage/memory"
)

// newTestServer is an API server over memory storage, with its caches
// running and the default namespace created, serving requests as the admin.
func newTestServer(t testing.TB) http.Handler {
	t.Helper()
	return newTestServerWith(t, Config{Storage: memory.New(memory.Options{}), Resources: all.Resources()})
}

// startTestServer runs a server of cfg until the test ends; h serves
// every request as an admin (system:masters).
func startTestServer(t testing.TB, cfg Config) (s *Server, h http.Handler) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx)
	<-s.Ready()
	admin := &auth.User{Name: "admin", Groups: []string{auth.GroupMasters}}
	return s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), admin)))
	})
}

// newTestServerWith is a running server of cfg that serves every request
// as an admin (system:masters), with the namespace default made.
func newTestServerWith(t testing.TB, cfg Config) http.Handler {
	t.Helper()
	_, h := startTestServer(t, cfg)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/api/v1/namespaces", bytes.NewBufferString(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`)))
	if rec.Code != http.StatusCreated {
		t.Fatalf("creating namespace: %d %s", rec.Code, rec.Body)
	}
	return h
}

// FuzzCreateAndPatch sends arbitrary bodies to create and patch handlers:
// the server must answer every one with a Status-shaped 4xx or a success,
// never a 5xx or a panic.
func FuzzCreateAndPatch(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`), "application/json", "/api/v1/namespaces/default/configmaps", "POST")
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`), "application/json", "/apis/apps/v1/namespaces/default/deployments", "POST")
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n"), "application/yaml", "/api/v1/namespaces/default/pods", "POST")
	f.Add([]byte(`[{"op":"add","path":"/data/x","value":"1"}]`), "application/json-patch+json", "/api/v1/namespaces/default/configmaps/a", "PATCH")
	f.Add([]byte(`{"spec":{"replicas":-1}}`), "application/strategic-merge-patch+json", "/apis/apps/v1/namespaces/default/deployments/d", "PATCH")
	f.Add([]byte("k8s\x00\x0a\x02"), "application/vnd.kubernetes.protobuf", "/api/v1/namespaces/default/services", "POST")
	f.Add([]byte(`{"spec":{"ports":[{"port":70000}]}}`), "application/merge-patch+json", "/api/v1/namespaces/default/services/s", "PATCH")
	h := newTestServer(f)
	f.Fuzz(func(t *testing.T, body []byte, contentType, path, method string) {
		if method != "POST" && method != "PATCH" && method != "PUT" {
			method = "POST"
		}
		if len(path) == 0 || path[0] != '/' {
			path = "/" + path
		}
		req, err := http.NewRequest(method, "http://x"+path, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusNotImplemented {
			t.Fatalf("%s %s (%s) -> %d: %s", method, path, contentType, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && !bytes.Contains(rec.Body.Bytes(), []byte(`"kind":"Status"`)) {
			t.Fatalf("error without Status body: %d %s", rec.Code, rec.Body)
		}
	})
}

// FuzzListQuery sends list requests with arbitrary label and field
// selectors (field paths included) and paging, version and timeout
// parameters: every answer is a success or a Status-shaped 4xx, never a
// 5xx or a panic.
func FuzzListQuery(f *testing.F) {
	f.Add("/api/v1/namespaces/default/pods", "a=b,c!=d,e in (f,g),!h", "metadata.name=x,spec.nodeName!=", "10", "", "0", "")
	f.Add("/api/v1/pods", "x", "status.phase==Running", "-1", "bad", "abc", "1s")
	f.Add("/apis/apps/v1/deployments", "a notin (", "metadata.namespace=default,metadata.name", "", "eyJ2IjoxfQ", "", "-5s")
	f.Add("/api/v1/namespaces/default/events", "k8s.io/a=b", "involvedObject.kind=Pod,reason=x", "1", "", "", "")
	f.Add("/api/v1/nodes", "", "spec.unschedulable=true", "", "", "999999999999", "")
	h := newTestServer(f)
	f.Fuzz(func(t *testing.T, path, labels, fields, limit, cont, resourceVersion, timeout string) {
		if len(path) == 0 || path[0] != '/' {
			path = "/" + path
		}
		q := url.Values{}
		for k, v := range map[string]string{"labelSelector": labels, "fieldSelector": fields, "limit": limit,
			"continue": cont, "resourceVersion": resourceVersion, "timeout": timeout} {
			if v != "" {
				q.Set(k, v)
			}
		}
		req, err := http.NewRequest("GET", "http://x"+path+"?"+q.Encode(), nil)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		if rec.Code >= 500 && rec.Code != http.StatusNotImplemented && rec.Code != http.StatusGatewayTimeout {
			t.Fatalf("GET %s?%s -> %d: %s", path, q.Encode(), rec.Code, rec.Body)
		}
		if rec.Code >= 400 && !bytes.Contains(rec.Body.Bytes(), []byte(`"kind":"Status"`)) {
			t.Fatalf("GET %s?%s: error without Status body: %d %s", path, q.Encode(), rec.Code, rec.Body)
		}
	})
}

// FuzzRequestInfo checks that no path or method makes parsing panic.
func FuzzRequestInfo(f *testing.F) {
	for _, p := range []string{"/api/v1/namespaces/a/pods/b/status", "/apis/apps/v1/watch/deployments", "/api", "/apis/x", "//", "/api/v1/namespaces/a"} {
		f.Add(p, "GET")
	}
	f.Fuzz(func(t *testing.T, path, method string) {
		req := httptest.NewRequest("GET", "/", nil)
		req.Method, req.URL.Path = method, path
		_ = parseRequestInfo(req)
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
