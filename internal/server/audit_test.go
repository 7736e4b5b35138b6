package server

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/audit"
)

// TestAuditLog: the audit log holds upstream's Events at the levels the
// policy gives: ConfigMaps with their request and response objects, Secrets
// with metadata only (a 404 with its Status), pods not at all; the
// RequestReceived stage omitted; an impersonated request names both
// users; a watch has ResponseStarted; every response carries Audit-ID.
func TestAuditLog(t *testing.T) {
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  users: ["kubernetes-admin", "bob"]
  resources: [{group: "", resources: ["configmaps"]}]
- level: Metadata
  users: ["kubernetes-admin"]
  resources: [{group: "", resources: ["secrets"]}]
- level: None
`), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "audit.log")
	_, cfg := startServerWith(t, Options{InMemory: true, Audit: audit.Options{Path: logFile, PolicyFile: policyFile}})
	cs := clientset(t, cfg)
	ctx := context.Background()
	_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audited"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("default").Get(ctx, "missing", metav1.GetOptions{}); err == nil {
		t.Fatal("a missing Secret was found")
	}
	if _, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	bobCfg := rest.CopyConfig(cfg)
	bobCfg.Impersonate = rest.ImpersonationConfig{UserName: "bob"}
	cs.CoreV1().ConfigMaps("default").Get(ctx, "audited", metav1.GetOptions{}) //nolint:errcheck // only its event matters
	clientset(t, bobCfg).CoreV1().ConfigMaps("default").Get(ctx, "audited", metav1.GetOptions{})
	wctx, stop := context.WithTimeout(ctx, 500*time.Millisecond)
	w, err := cs.CoreV1().ConfigMaps("default").Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-wctx.Done()
	w.Stop()
	stop()
	code, header, _ := raw(t, cfg, "GET", "/api/v1/namespaces/default/configmaps/audited", "", "", "")
	if code != 200 || header.Get("Audit-ID") == "" {
		t.Errorf("a response without Audit-ID: %d %v", code, header)
	}

	var events []auditv1.Event
	deadline := time.Now().Add(5 * time.Second)
	for {
		events = readAudit(t, logFile)
		if hasEvent(events, func(e auditv1.Event) bool { return e.Verb == "watch" && e.Stage == auditv1.StageResponseComplete }) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	checks := []struct {
		what string
		ok   func(auditv1.Event) bool
	}{
		{"the create, with both objects", func(e auditv1.Event) bool {
			return e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Resource == "configmaps" && e.Level == auditv1.LevelRequestResponse &&
				e.Stage == auditv1.StageResponseComplete && e.RequestObject != nil && e.ResponseObject != nil && e.ResponseStatus.Code == 201 &&
				e.User.Username == "kubernetes-admin"
		}},
		{"the missing Secret, metadata and its 404", func(e auditv1.Event) bool {
			return e.Verb == "get" && e.ObjectRef != nil && e.ObjectRef.Resource == "secrets" && e.ObjectRef.Name == "missing" &&
				e.Level == auditv1.LevelMetadata && e.RequestObject == nil && e.ResponseObject == nil &&
				e.ResponseStatus.Code == 404 && e.ResponseStatus.Reason == metav1.StatusReasonNotFound
		}},
		{"bob's get, impersonated by the admin", func(e auditv1.Event) bool {
			return e.Verb == "get" && e.User.Username == "kubernetes-admin" && e.ImpersonatedUser != nil && e.ImpersonatedUser.Username == "bob"
		}},
		{"the watch's ResponseStarted", func(e auditv1.Event) bool {
			return e.Verb == "watch" && e.Stage == auditv1.StageResponseStarted && e.ResponseObject == nil
		}},
	}
	for _, c := range checks {
		if !hasEvent(events, c.ok) {
			t.Errorf("no event for %s in %d events", c.what, len(events))
		}
	}
	for _, e := range events {
		if e.Stage == auditv1.StageRequestReceived {
			t.Errorf("a RequestReceived event, omitted by the policy: %+v", e)
		}
		if e.ObjectRef != nil && e.ObjectRef.Resource == "pods" {
			t.Errorf("a pods event, level None: %+v", e)
		}
		if e.Kind != "Event" || e.APIVersion != "audit.k8s.io/v1" || e.AuditID == "" {
			t.Errorf("not an audit.k8s.io/v1 Event: %+v", e)
		}
	}
}

func readAudit(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("an audit line that is not an Event: %v: %s", err, sc.Text())
		}
		out = append(out, e)
	}
	return out
}

func hasEvent(events []auditv1.Event, ok func(auditv1.Event) bool) bool {
	for _, e := range events {
		if ok(e) {
			return true
		}
	}
	return false
}
