package apiserver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStatusWriteDefaulted: a /status body is defaulted like any other (a
// load balancer ingress IP gets ipMode VIP, which validation requires), as
// upstream defaults every body it decodes.
func TestStatusWriteDefaulted(t *testing.T) {
	h := newTestServer(t)
	do := func(method, path, contentType, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", contentType)
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := do("POST", "/api/v1/namespaces/default/services", "application/json",
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"lb"},"spec":{"type":"LoadBalancer","clusterIP":"10.96.0.20","clusterIPs":["10.96.0.20"],"ports":[{"port":80,"nodePort":30080}]}}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	rec = do("PATCH", "/api/v1/namespaces/default/services/lb/status", "application/merge-patch+json",
		`{"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.1"}]}}}`)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"ipMode":"VIP"`) {
		t.Fatalf("status patch: %d %s", rec.Code, rec.Body)
	}
}
