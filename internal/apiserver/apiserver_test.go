package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apfbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/registry/all"
	"plainkube.dev/plainkube/internal/storage/memory"
)

func do(h http.Handler, method, path, contentType, accept, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestPanicInHandlerIsA500AndServerKeepsServing(t *testing.T) {
	resources := all.Resources()
	for i := range resources {
		if resources[i].Plural == "configmaps" {
			resources[i].Strategy.Validate = func(obj runtime.Object) field.ErrorList {
				if obj.(*corev1.ConfigMap).Name == "boom" {
					panic("validation exploded")
				}
				return nil
			}
		}
	}
	_, h := startTestServer(t, Config{Storage: memory.New(memory.Options{}), Resources: resources, Logger: discardLogger()})
	do(h, "POST", "/api/v1/namespaces", "application/json", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`)
	rec := do(h, "POST", "/api/v1/namespaces/default/configmaps", "application/json", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"boom"}}`)
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"kind":"Status"`) {
		t.Fatalf("panic: %d %s", rec.Code, rec.Body)
	}
	rec = do(h, "POST", "/api/v1/namespaces/default/configmaps", "application/json", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fine"}}`)
	if rec.Code != 201 {
		t.Fatalf("after a panic: %d %s", rec.Code, rec.Body)
	}
}

func TestStatusCodes(t *testing.T) {
	h := newTestServer(t)
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`
	// 10,001 operations; and copies that would grow a 100 KB value into
	// far more than upstream's 3 MiB of copies.
	tooMany := "[" + strings.TrimSuffix(strings.Repeat(`{"op":"test","path":"/metadata/name","value":"a"},`, 10001), ",") + "]"
	copies := `[{"op":"add","path":"/data","value":{"k":"` + strings.Repeat("x", 100<<10) + `"}}` +
		strings.Repeat(`,{"op":"copy","from":"/data/k","path":"/data/k2"}`, 40) + "]"
	cases := []struct {
		name, method, path, ct, body string
		code                         int
	}{
		{"create", "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm, 201},
		{"dry-run create stores nothing", "POST", "/api/v1/namespaces/default/configmaps?dryRun=All", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry"}}`, 201},
		{"dry-run object absent", "GET", "/api/v1/namespaces/default/configmaps/dry", "", "", 404},
		{"bad dryRun", "POST", "/api/v1/namespaces/default/configmaps?dryRun=Maybe", "application/json", cm, 400},
		{"post to a name", "POST", "/api/v1/namespaces/default/configmaps/a", "application/json", cm, 405},
		{"unknown resource", "GET", "/api/v1/namespaces/default/widgets", "", "", 404},
		{"unknown group", "GET", "/apis/nope.example.com/v1/things", "", "", 404},
		{"namespaced resource without namespace, by name", "GET", "/api/v1/configmaps/a", "", "", 404},
		{"exists", "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm, 409},
		{"dry-run create of a name taken", "POST", "/api/v1/namespaces/default/configmaps?dryRun=All", "application/json", cm, 409},
		{"create with a resourceVersion", "POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rv","resourceVersion":"5"}}`, 400},
		{"dry-run create with a resourceVersion", "POST", "/api/v1/namespaces/default/configmaps?dryRun=All", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rv","resourceVersion":"5"}}`, 201},
		{"invalid create with a resourceVersion", "POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name","resourceVersion":"5"}}`, 422},
		{"stale update", "PUT", "/api/v1/namespaces/default/configmaps/a", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1"}}`, 409},
		{"name mismatch", "PUT", "/api/v1/namespaces/default/configmaps/a", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`, 400},
		{"bad fieldValidation", "POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Loose", "application/json", cm, 400},
		{"bad resourceVersion", "GET", "/api/v1/namespaces/default/configmaps?resourceVersion=abc", "", "", 400},
		{"rvMatch without rv", "GET", "/api/v1/namespaces/default/configmaps?resourceVersionMatch=Exact", "", "", 422},
		{"future rv", "GET", "/api/v1/namespaces/default/configmaps?resourceVersion=99999999&resourceVersionMatch=NotOlderThan", "", "", 504},
		{"patch unsupported type", "PATCH", "/api/v1/namespaces/default/configmaps/a", "application/xml", `{}`, 415},
		{"json patch of too many operations", "PATCH", "/api/v1/namespaces/default/configmaps/a", "application/json-patch+json", tooMany, 413},
		{"json patch copying too much", "PATCH", "/api/v1/namespaces/default/configmaps/a", "application/json-patch+json", copies, 422},
		{"json patch within bounds", "PATCH", "/api/v1/namespaces/default/configmaps/a", "application/json-patch+json", `[{"op":"add","path":"/data","value":{"p":"v"}},{"op":"copy","from":"/data/p","path":"/data/p2"}]`, 200},
		{"apply without fieldManager", "PATCH", "/api/v1/namespaces/default/configmaps/a", "application/apply-patch+yaml", cm, 422},
		{"apply", "PATCH", "/api/v1/namespaces/default/configmaps/a?fieldManager=x", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"x"}}`, 200},
		{"apply conflict", "PATCH", "/api/v1/namespaces/default/configmaps/a?fieldManager=y", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"y"}}`, 409},
		{"apply forced", "PATCH", "/api/v1/namespaces/default/configmaps/a?fieldManager=y&force=true", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"y"}}`, 200},
		{"apply creates", "PATCH", "/api/v1/namespaces/default/configmaps/new?fieldManager=x", "application/apply-patch+yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new}\n", 201},
		{"delete", "DELETE", "/api/v1/namespaces/default/configmaps/a", "", "", 200},
		{"delete again", "DELETE", "/api/v1/namespaces/default/configmaps/a", "", "", 404},
		{"bad propagation", "DELETE", "/api/v1/namespaces/default/configmaps/x?propagationPolicy=Sideways", "", "", 422},
	}
	for _, c := range cases {
		rec := do(h, c.method, c.path, c.ct, "", c.body)
		if rec.Code != c.code {
			t.Errorf("%s: %s %s -> %d, want %d: %s", c.name, c.method, c.path, rec.Code, c.code, rec.Body)
			continue
		}
		if rec.Code >= 400 {
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || int(st.Code) != c.code {
				t.Errorf("%s: body is not a Status with code %d: %s", c.name, c.code, rec.Body)
			}
		}
	}
}

// TestTooManyRequests: past its seats a client's request waits, and gets
// 429 with Retry-After when its wait ends (here by ?timeout); a user has
// at most half its level's seats, the nodes seats of their own, and
// system:masters is never limited. Every answer names the FlowSchema and
// priority level of the request.
func TestTooManyRequests(t *testing.T) {
	// 49 seats: global-default's 20 of the bootstrap levels' 245 shares
	// are 4, 2 per user.
	s, err := New(Config{Storage: memory.New(memory.Options{}), Resources: all.Resources(), MaxRequestsInFlight: 49})
	if err != nil {
		t.Fatal(err)
	}
	// The stored bootstrap objects, as the server's APF informers give them.
	var schemas []*flowcontrolv1.FlowSchema
	var levels []*flowcontrolv1.PriorityLevelConfiguration
	for _, fs := range slices.Concat(apfbootstrap.MandatoryFlowSchemas, apfbootstrap.SuggestedFlowSchemas) {
		fs = fs.DeepCopy()
		fs.UID = types.UID("uid-" + fs.Name)
		schemas = append(schemas, fs)
	}
	for _, pl := range slices.Concat(apfbootstrap.MandatoryPriorityLevelConfigurations, apfbootstrap.SuggestedPriorityLevelConfigurations) {
		pl = pl.DeepCopy()
		pl.UID = types.UID("uid-" + pl.Name)
		levels = append(levels, pl)
	}
	s.SetFlowControl(schemas, levels)
	bob := &auth.User{Name: "bob", Groups: []string{auth.GroupAuthenticated}}
	ctx := context.Background()
	for range 2 { // bob has two requests being served
		if _, ok := s.seats.acquireAs(ctx, bob, nil, nil); !ok {
			t.Fatal("no seat for bob's first requests")
		}
	}
	get := func(u *auth.User) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/api/v1?timeout=200ms", nil) // discovery: any authenticated user
		req = req.WithContext(auth.WithUser(req.Context(), u))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	if rec := get(bob); rec.Code != 429 || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("bob past his share: got %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	alice := &auth.User{Name: "alice", Groups: []string{auth.GroupAuthenticated}}
	if rec := get(alice); rec.Code != 200 {
		t.Fatalf("alice while bob is at his share: %d", rec.Code)
	}
	for range 2 {
		if _, ok := s.seats.acquireAs(ctx, alice, nil, nil); !ok {
			t.Fatal("no seat for alice")
		}
	}
	carol := &auth.User{Name: "carol", Groups: []string{auth.GroupAuthenticated}}
	rec := get(carol)
	if rec.Code != 429 {
		t.Fatalf("carol with the global-default level full: %d", rec.Code)
	}
	if fs, pl := rec.Header().Get("X-Kubernetes-PF-FlowSchema-UID"), rec.Header().Get("X-Kubernetes-PF-PriorityLevel-UID"); fs != "uid-global-default" || pl != "uid-global-default" {
		t.Errorf("a refused request's classification headers: %q %q", fs, pl)
	}
	if rec := get(auth.NodeUser("n1")); rec.Code != 200 {
		t.Fatalf("a node with the workload level full: %d (the system level is its own)", rec.Code)
	}
	if rec := get(&auth.User{Name: "admin", Groups: []string{auth.GroupMasters}}); rec.Code != 200 {
		t.Fatalf("the admin with the workload level full: %d", rec.Code)
	}
}

func TestTableAndDiscovery(t *testing.T) {
	h := newTestServer(t)
	do(h, "POST", "/api/v1/namespaces/default/pods", "application/json", "", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	rec := do(h, "GET", "/api/v1/namespaces/default/pods", "", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "")
	var table metav1.Table
	if err := json.Unmarshal(rec.Body.Bytes(), &table); err != nil || table.Kind != "Table" {
		t.Fatalf("table: %v %s", err, rec.Body)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	if strings.Join(cols, " ") != "Name Ready Status Restarts Age" || len(table.Rows) != 1 || table.Rows[0].Cells[2] != "Pending" {
		t.Fatalf("pod table: %v rows %v", cols, table.Rows)
	}
	if !bytes.Contains(table.Rows[0].Object.Raw, []byte(`"kind":"PartialObjectMetadata"`)) {
		t.Fatalf("row object: %s", table.Rows[0].Object.Raw)
	}
	rec = do(h, "GET", "/apis", "", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", "")
	if ct := rec.Header().Get("Content-Type"); ct != aggregatedMediaType {
		t.Fatalf("aggregated discovery content type %q", ct)
	}
	if !strings.Contains(rec.Body.String(), `"responseKind":{"group":"apps","version":"v1","kind":"Deployment"}`) {
		t.Fatalf("aggregated discovery lacks deployments: %.300s", rec.Body)
	}
	rec = do(h, "GET", "/api/v1", "", "", "")
	var list metav1.APIResourceList
	json.Unmarshal(rec.Body.Bytes(), &list)
	found := false
	for _, r := range list.APIResources {
		if r.Name == "pods" && strings.Join(r.ShortNames, ",") == "po" && strings.Join(r.Categories, ",") == "all" {
			found = true
		}
	}
	if !found {
		t.Fatalf("legacy discovery: pods without short name po / category all")
	}
	etag := rec.Header().Get("ETag")
	req := httptest.NewRequest("GET", "/api/v1", nil)
	req.Header.Set("If-None-Match", etag)
	rec2 := httptest.NewRecorder()
	h.ServeHTTP(rec2, req)
	if rec2.Code != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", rec2.Code)
	}
}

// TestApplyToScale: server-side apply on /scale shares field ownership of
// spec.replicas with the parent, as upstream.
func TestApplyToScale(t *testing.T) {
	h := newTestServer(t)
	dep := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":2,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`
	if rec := do(h, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d?fieldManager=owner", "application/apply-patch+yaml", "", dep); rec.Code != 201 {
		t.Fatalf("apply deployment: %d %s", rec.Code, rec.Body)
	}
	scale := `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d"},"spec":{"replicas":3}}`
	if rec := do(h, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d/scale?fieldManager=scaler", "application/apply-patch+yaml", "", scale); rec.Code != 409 {
		t.Fatalf("conflicting scale apply: %d %s", rec.Code, rec.Body)
	}
	rec := do(h, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d/scale?fieldManager=scaler&force=true", "application/apply-patch+yaml", "", scale)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"replicas":3`) {
		t.Fatalf("forced scale apply: %d %s", rec.Code, rec.Body)
	}
	rec = do(h, "GET", "/apis/apps/v1/namespaces/default/deployments/d", "", "", "")
	if !strings.Contains(rec.Body.String(), `"replicas":3`) || !strings.Contains(rec.Body.String(), `"manager":"scaler"`) {
		t.Fatalf("deployment after scale apply: %s", rec.Body)
	}
}

// TestSubresourcePatches: every patch type reaches /status, and
// /ephemeralcontainers takes the strategic merge patch kubectl debug sends.
func TestSubresourcePatches(t *testing.T) {
	h := newTestServer(t)
	do(h, "POST", "/apis/apps/v1/namespaces/default/deployments", "application/json", "", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`)
	for _, c := range []struct{ ct, body string }{
		{"application/json-patch+json", `[{"op":"add","path":"/status/replicas","value":1}]`},
		{"application/merge-patch+json", `{"status":{"replicas":2}}`},
		{"application/strategic-merge-patch+json", `{"status":{"replicas":3}}`},
	} {
		if rec := do(h, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d/status", c.ct, "", c.body); rec.Code != 200 {
			t.Fatalf("%s on status: %d %s", c.ct, rec.Code, rec.Body)
		}
	}
	rec := do(h, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d/status?fieldManager=ctl&force=true", "application/apply-patch+yaml", "", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"status":{"replicas":4}}`)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"replicas":4`) {
		t.Fatalf("apply on status: %d %s", rec.Code, rec.Body)
	}
	do(h, "POST", "/api/v1/namespaces/default/pods", "application/json", "", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)
	rec = do(h, "PATCH", "/api/v1/namespaces/default/pods/p/ephemeralcontainers", "application/strategic-merge-patch+json", "", `{"spec":{"ephemeralContainers":[{"name":"debugger","image":"busybox","stdin":true,"tty":true,"terminationMessagePolicy":"File"}]}}`)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"name":"debugger"`) {
		t.Fatalf("ephemeral container: %d %s", rec.Code, rec.Body)
	}
}
