package server

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"plainkube.dev/plainkube/internal/api/stats"
)

func TestStatsSummary(t *testing.T) {
	get := func(h *Handler) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/stats/summary", nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get(&Handler{}); code != 501 {
		t.Errorf("without a source: %d", code)
	}
	if code, body := get(&Handler{Summary: func() (*stats.Summary, error) { return nil, errors.New("not yet") }}); code != 503 || !strings.Contains(body, "not yet") {
		t.Errorf("before a sample: %d %s", code, body)
	}
	s := &stats.Summary{Node: stats.NodeStats{NodeName: "n1"}, Pods: []stats.PodStats{}}
	if code, body := get(&Handler{Summary: func() (*stats.Summary, error) { return s, nil }}); code != 200 || !strings.Contains(body, `"node":{"nodeName":"n1"`) || !strings.Contains(body, `"pods":[]`) {
		t.Errorf("summary: %d %s", code, body)
	}
}
