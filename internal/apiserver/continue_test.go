package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry/all"
	"plainkube.dev/plainkube/internal/storage/memory"
)

// TestContinueAfterCompaction: a continued list whose revision has been
// compacted answers 410 with upstream's message and a token that continues
// from the same key at the latest revision (an inconsistent list, which
// then pages on as usual and shows what changed meanwhile).
func TestContinueAfterCompaction(t *testing.T) {
	store := memory.New(memory.Options{})
	s, err := New(Config{Storage: store, Resources: all.Resources()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	<-s.Ready()
	admin := &auth.User{Name: "admin", Groups: []string{auth.GroupMasters}}
	do := func(method, path, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, bytes.NewBufferString(body))
		s.ServeHTTP(rec, req.WithContext(auth.WithUser(req.Context(), admin)))
		return rec
	}
	do("POST", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`)
	for i := range 6 {
		if rec := do("POST", "/api/v1/namespaces/default/configmaps", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d"}}`, i)); rec.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
	}
	type list struct {
		metav1.ListMeta `json:"metadata"`
		Items           []struct {
			metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	page := func(cont string) (*httptest.ResponseRecorder, list) {
		rec := do("GET", "/api/v1/namespaces/default/configmaps?limit=2&continue="+url.QueryEscape(cont), "")
		var l list
		json.Unmarshal(rec.Body.Bytes(), &l)
		return rec, l
	}
	_, first := page("")
	if len(first.Items) != 2 || first.Continue == "" {
		t.Fatalf("first page: %+v", first)
	}
	// Change what the rest of the list holds, then compact past the first
	// page's revision.
	do("DELETE", "/api/v1/namespaces/default/configmaps/cm-2", "")
	rec := do("POST", "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-9"}}`)
	var created metav1.PartialObjectMetadata
	json.Unmarshal(rec.Body.Bytes(), &created)
	var rev int64
	fmt.Sscan(created.ResourceVersion, &rev)
	if err := store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}

	rec, _ = page(first.Continue)
	var status metav1.Status
	json.Unmarshal(rec.Body.Bytes(), &status)
	if rec.Code != http.StatusGone || status.Reason != metav1.StatusReasonExpired || status.Continue == "" ||
		status.Message != inconsistentContinue {
		t.Fatalf("continue at a compacted revision: %d %s", rec.Code, rec.Body)
	}
	var names []string
	for cont := status.Continue; cont != ""; {
		rec, l := page(cont)
		if rec.Code != http.StatusOK {
			t.Fatalf("inconsistent continue: %d %s", rec.Code, rec.Body)
		}
		if l.ResourceVersion == first.ResourceVersion {
			t.Errorf("inconsistent page at the first page's revision %s", l.ResourceVersion)
		}
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
		cont = l.Continue
	}
	if fmt.Sprint(names) != "[cm-3 cm-4 cm-5 cm-9]" {
		t.Errorf("the rest of the list, inconsistently: %v, want [cm-3 cm-4 cm-5 cm-9]", names)
	}
}
