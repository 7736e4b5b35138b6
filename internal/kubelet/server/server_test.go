package server

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestContainerLogs(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "pods", "default_web_uid1", "c")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "0.log"), []byte("2026-11-29T10:00:01Z stdout F hello\n2026-11-29T10:00:02Z stdout F world\n"), 0o644)
	h := &Handler{DataDir: data}
	cases := []struct {
		path string
		code int
		body string
	}{
		{"/containerLogs/default/web/c", 200, "hello\nworld\n"},
		{"/containerLogs/default/web/c?tailLines=1", 200, "world\n"},
		{"/containerLogs/default/web/c?previous=true", 400, "previous terminated container"},
		{"/containerLogs/default/other/c", 404, "no logs"},
		{"/containerLogs/default/web/..", 400, "bad path"},
		{"/containerLogs/default/web/c?tailLines=x", 400, "invalid tailLines"},
		{"/healthz", 200, "ok"},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", c.path, nil))
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("%s: %d %q, want %d %q", c.path, rec.Code, rec.Body, c.code, c.body)
		}
	}
}
