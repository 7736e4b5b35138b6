package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/admission"
	"plainkube.dev/plainkube/internal/admission/webhook/webhooktest"
	"plainkube.dev/plainkube/internal/auth"
)

// staticSource holds fixed webhooks and namespace labels.
type staticSource struct {
	mutating, validating []*hook
	namespaces           map[string]map[string]string
	unsynced             bool
}

func (s *staticSource) HasSynced() bool     { return !s.unsynced }
func (s *staticSource) Mutating() []*hook   { return s.mutating }
func (s *staticSource) Validating() []*hook { return s.validating }
func (s *staticSource) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	l, ok := s.namespaces[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
	}
	return l, nil
}

var configMapRule = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
}}

func ptr[T any](v T) *T { return &v }

// validatingWebhook is a webhook of configuration config calling url.
func validatingWebhook(name, url string, ca []byte) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}, Rules: configMapRule,
		SideEffects: ptr(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		FailurePolicy: ptr(admissionregistrationv1.Fail), TimeoutSeconds: ptr(int32(10)),
	}
}

func mutatingWebhook(name, url string, ca []byte) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}, Rules: configMapRule,
		SideEffects: ptr(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		FailurePolicy: ptr(admissionregistrationv1.Fail), TimeoutSeconds: ptr(int32(10)),
	}
}

func validating(config string, hooks ...admissionregistrationv1.ValidatingWebhook) []*hook {
	return validatingHooks(&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: config}, Webhooks: hooks})
}

func mutating(config string, hooks ...admissionregistrationv1.MutatingWebhook) []*hook {
	return mutatingHooks(&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: config}, Webhooks: hooks})
}

// createConfigMap is the attributes of creating cm in namespace ns.
func createConfigMap(cm *corev1.ConfigMap) *admission.Attributes {
	return &admission.Attributes{
		Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Namespace: cm.Namespace, Name: cm.Name,
		Object: cm, Options: &metav1.CreateOptions{}, User: &auth.User{Name: "alice", Groups: []string{"devs"}},
	}
}

func configMap(name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Labels: labels}, Data: map[string]string{"k": "v"}}
}

func plugins(src *staticSource) *Webhooks {
	if src.namespaces == nil {
		src.namespaces = map[string]map[string]string{"team": {"env": "dev"}}
	}
	w := New(Options{Logger: slog.New(slog.DiscardHandler)})
	w.start(src, nil, nil)
	return w
}

func statusOf(t *testing.T, err error) metav1.Status {
	t.Helper()
	se, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("error %v (%T) is not an API status", err, err)
	}
	return se.Status()
}

func TestValidatingDenialAndRequest(t *testing.T) {
	srv := webhooktest.New(t, func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var cm corev1.ConfigMap
		json.Unmarshal(r.Object.Raw, &cm)
		if cm.Labels["deny"] == "yes" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "labelled deny", Code: 403}, Warnings: []string{"saw a deny label"},
				AuditAnnotations: map[string]string{"decision": "deny"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	w := plugins(&staticSource{validating: validating("deny", validatingWebhook("deny.example.com", srv.URL+"/validate", srv.CAPEM))})

	a := createConfigMap(configMap("c1", map[string]string{"deny": "yes"}))
	err := w.validate(context.Background(), a)
	st := statusOf(t, err)
	if want := `admission webhook "deny.example.com" denied the request: labelled deny`; st.Message != want || st.Code != 403 {
		t.Fatalf("got %d %q, want 403 %q", st.Code, st.Message, want)
	}
	if got := a.Warnings(); len(got) != 1 || got[0] != "saw a deny label" {
		t.Errorf("warnings %q", got)
	}
	if got := a.Annotations()["deny.example.com/decision"]; got != "deny" {
		t.Errorf("audit annotation %q", got)
	}
	if err := w.validate(context.Background(), createConfigMap(configMap("c2", nil))); err != nil {
		t.Fatalf("unlabelled: %v", err)
	}
	calls := srv.Requests()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2", len(calls))
	}
	r := calls[0]
	if r.Kind.Kind != "ConfigMap" || r.Resource.Resource != "configmaps" || r.RequestKind == nil || r.RequestKind.Kind != "ConfigMap" ||
		r.RequestResource == nil || r.RequestResource.Resource != "configmaps" || r.Name != "c1" || r.Namespace != "team" ||
		r.Operation != admissionv1.Create || r.UserInfo.Username != "alice" || r.DryRun == nil || *r.DryRun {
		t.Errorf("request %+v", r)
	}
	var obj map[string]any
	json.Unmarshal(r.Object.Raw, &obj)
	if obj["apiVersion"] != "v1" || obj["kind"] != "ConfigMap" {
		t.Errorf("object %s has no apiVersion/kind", r.Object.Raw)
	}
	var opts map[string]any
	json.Unmarshal(r.Options.Raw, &opts)
	if opts["kind"] != "CreateOptions" || opts["apiVersion"] != "meta.k8s.io/v1" {
		t.Errorf("options %s", r.Options.Raw)
	}
}

func TestDenialWithoutCodeIs400(t *testing.T) {
	srv := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{}
	})
	w := plugins(&staticSource{validating: validating("deny", validatingWebhook("deny.example.com", srv.URL, srv.CAPEM))})
	st := statusOf(t, w.validate(context.Background(), createConfigMap(configMap("c", nil))))
	if want := `admission webhook "deny.example.com" denied the request without explanation`; st.Code != 400 || st.Message != want {
		t.Fatalf("got %d %q", st.Code, st.Message)
	}
}

func labelPatch(key, value string) []byte {
	return []byte(`[{"op":"add","path":"/metadata/labels","value":{}},{"op":"add","path":"/metadata/labels/` + key + `","value":"` + value + `"}]`)
}

func TestMutatingInOrderWithReinvocation(t *testing.T) {
	jsonPatch := admissionv1.PatchTypeJSONPatch
	// "a-observer" runs first and is asked again (IfNeeded) after
	// "b-labeller" adds a label; "c-reader" runs after and sees it at once.
	var mu sync.Mutex
	var seen []string
	observe := func(who string) func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			var cm corev1.ConfigMap
			json.Unmarshal(r.Object.Raw, &cm)
			mu.Lock()
			seen = append(seen, who+"="+cm.Labels["added"])
			mu.Unlock()
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
	}
	observer := webhooktest.New(t, observe("a"))
	reader := webhooktest.New(t, observe("c"))
	labeller := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: labelPatch("added", "yes")}
	})
	a := mutatingWebhook("a.example.com", observer.URL, observer.CAPEM)
	a.ReinvocationPolicy = ptr(admissionregistrationv1.IfNeededReinvocationPolicy)
	var hooks []*hook
	hooks = append(hooks, mutating("a-observer", a)...)
	hooks = append(hooks, mutating("b-labeller", mutatingWebhook("b.example.com", labeller.URL, labeller.CAPEM))...)
	hooks = append(hooks, mutating("c-reader", mutatingWebhook("c.example.com", reader.URL, reader.CAPEM))...)
	w := plugins(&staticSource{mutating: hooks})

	cm := configMap("c", nil)
	attrs := createConfigMap(cm)
	ctx, waited := admission.TrackWebhookTime(context.Background())
	start := time.Now()
	if err := (admission.Chain{w.Mutating()}).Mutate(ctx, attrs); err != nil {
		t.Fatal(err)
	}
	// The request's time with webhooks is what its SLI leaves out.
	if took := time.Since(start); waited.Total() <= 0 || waited.Total() > took {
		t.Errorf("webhook time %v, of a call that took %v", waited.Total(), took)
	}
	if cm.Labels["added"] != "yes" || attrs.Object.(*corev1.ConfigMap) != cm {
		t.Fatalf("object not patched in place: %v", attrs.Object)
	}
	if got, want := strings.Join(seen, ","), "a=,c=yes,a=yes"; got != want {
		t.Fatalf("calls %s, want %s", got, want)
	}
	if got := len(labeller.Requests()); got != 1 {
		t.Errorf("labeller (reinvocation Never) called %d times", got)
	}
}

// TestReinvocationAfterALaterPlugin: once a webhook changed the object,
// the mutating phase runs again, and an IfNeeded webhook is called again
// if a plugin after it changed the object — not if none did.
func TestReinvocationAfterALaterPlugin(t *testing.T) {
	jsonPatch := admissionv1.PatchTypeJSONPatch
	for _, laterChange := range []bool{false, true} {
		var mu sync.Mutex
		var seen []string
		observer := webhooktest.New(t, func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			var cm corev1.ConfigMap
			json.Unmarshal(r.Object.Raw, &cm)
			mu.Lock()
			seen = append(seen, "stamp="+cm.Labels["stamp"])
			mu.Unlock()
			return &admissionv1.AdmissionResponse{Allowed: true}
		})
		labeller := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: labelPatch("added", "yes")}
		})
		a := mutatingWebhook("a.example.com", observer.URL, observer.CAPEM)
		a.ReinvocationPolicy = ptr(admissionregistrationv1.IfNeededReinvocationPolicy)
		var hooks []*hook
		hooks = append(hooks, mutating("a-labeller", mutatingWebhook("b.example.com", labeller.URL, labeller.CAPEM))...)
		hooks = append(hooks, mutating("b-observer", a)...)
		w := plugins(&staticSource{mutating: hooks})
		runs := 0
		stamp := admission.Plugin{Name: "Stamp", Mutate: func(_ context.Context, a *admission.Attributes) error {
			runs++
			if laterChange {
				a.Object.(*corev1.ConfigMap).Labels["stamp"] = "1"
			}
			return nil
		}}
		attrs := createConfigMap(configMap("c", nil))
		if err := (admission.Chain{w.Mutating(), stamp}).Mutate(context.Background(), attrs); err != nil {
			t.Fatal(err)
		}
		want := "stamp="
		if laterChange {
			want = "stamp=,stamp=1"
		}
		if got := strings.Join(seen, ","); got != want || runs != 2 {
			t.Errorf("later change %v: observer saw %s, want %s; the later plugin ran %d times, want 2", laterChange, got, want, runs)
		}
		if got := len(labeller.Requests()); got != 1 {
			t.Errorf("labeller (reinvocation Never) called %d times", got)
		}
	}
}

// defaulting is Versions that only defaults: a ConfigMap without data
// key "k" gets "default".
type defaulting struct{}

func (defaulting) Equivalents(schema.GroupVersionResource, string) []Equivalent { return nil }
func (defaulting) Convert(context.Context, runtime.Object, schema.GroupVersionKind) (runtime.Object, error) {
	return nil, errors.New("no conversion")
}
func (defaulting) Default(obj runtime.Object) {
	if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Data["k"] == "" {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["k"] = "default"
	}
}

// TestPatchedObjectIsDefaulted: what a webhook's patch removes gets its
// default again.
func TestPatchedObjectIsDefaulted(t *testing.T) {
	jsonPatch := admissionv1.PatchTypeJSONPatch
	remover := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`[{"op":"remove","path":"/data/k"}]`)}
	})
	w := New(Options{Logger: slog.New(slog.DiscardHandler)})
	w.start(&staticSource{mutating: mutating("remover", mutatingWebhook("r.example.com", remover.URL, remover.CAPEM)),
		namespaces: map[string]map[string]string{"team": {}}}, nil, defaulting{})
	cm := configMap("c", nil)
	cm.Data["k"] = "mine"
	attrs := createConfigMap(cm)
	if err := (admission.Chain{w.Mutating()}).Mutate(context.Background(), attrs); err != nil {
		t.Fatal(err)
	}
	if got := attrs.Object.(*corev1.ConfigMap).Data["k"]; got != "default" {
		t.Errorf("data k after the patch removed it: %q, want the default", got)
	}
}

func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func TestFailurePolicy(t *testing.T) {
	port := strconv.Itoa(closedPort(t))
	url := "https://127.0.0.1:" + port
	for _, c := range []struct {
		name   string
		policy admissionregistrationv1.FailurePolicyType
		want   string
	}{
		{"fail", admissionregistrationv1.Fail, `Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: Post "https://127.0.0.1:` + port + `/?timeout=10s": dial tcp 127.0.0.1:` + port + `: connect: connection refused`},
		{"ignore", admissionregistrationv1.Ignore, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			vh := validatingWebhook("down.example.com", url, nil)
			vh.FailurePolicy = &c.policy
			mh := mutatingWebhook("down.example.com", url, nil)
			mh.FailurePolicy = &c.policy
			w := plugins(&staticSource{validating: validating("down", vh), mutating: mutating("down", mh)})
			for phase, run := range map[string]admission.MutateFunc{"validate": w.validate, "mutate": w.mutate} {
				a := createConfigMap(configMap("c", nil))
				err := run(context.Background(), a)
				if c.want == "" {
					if err != nil {
						t.Fatalf("%s: %v", phase, err)
					}
					if len(a.Annotations()) == 0 {
						t.Errorf("%s: no failed-open annotation", phase)
					}
					continue
				}
				st := statusOf(t, err)
				if st.Code != 500 || st.Message != c.want {
					t.Errorf("%s: got %d %q\nwant 500 %q", phase, st.Code, st.Message, c.want)
				}
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	h := validatingWebhook("slow.example.com", srv.URL, srv.CAPEM)
	h.TimeoutSeconds = ptr(int32(1))
	w := plugins(&staticSource{validating: validating("slow", h)})
	start := time.Now()
	err := w.validate(context.Background(), createConfigMap(configMap("c", nil)))
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v with a 1 s timeout", d)
	}
	st := statusOf(t, err)
	if want := `Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: Post "` + srv.URL + `/?timeout=1s": context deadline exceeded`; st.Message != want {
		t.Fatalf("got %q\nwant %q", st.Message, want)
	}
}

func TestDryRun(t *testing.T) {
	srv := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	some := validatingWebhook("some.example.com", srv.URL, srv.CAPEM)
	some.SideEffects = ptr(admissionregistrationv1.SideEffectClassSome)
	w := plugins(&staticSource{validating: validating("some", some)})
	a := createConfigMap(configMap("c", nil))
	a.DryRun = true
	st := statusOf(t, w.validate(context.Background(), a))
	if want := `admission webhook "some.example.com" does not support dry run`; st.Code != 400 || st.Message != want {
		t.Fatalf("got %d %q", st.Code, st.Message)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("webhook called %d times on a dry run", n)
	}
	// A webhook without side effects on dry runs is called, told so.
	onDry := validatingWebhook("nodry.example.com", srv.URL, srv.CAPEM)
	onDry.SideEffects = ptr(admissionregistrationv1.SideEffectClassNoneOnDryRun)
	w = plugins(&staticSource{validating: validating("nodry", onDry)})
	if err := w.validate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if c := srv.Requests(); len(c) != 1 || c[0].DryRun == nil || !*c[0].DryRun {
		t.Fatalf("calls %v", c)
	}
}

func TestBadAnswers(t *testing.T) {
	garbage := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("not json")) }))
	defer garbage.Close()
	garbageCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: garbage.Certificate().Raw})
	jsonPatch := admissionv1.PatchTypeJSONPatch
	badPatch := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`[{"op":"replace","path":"/spec/nothing","value":1}]`)}
	})
	wrongUID := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"other","allowed":true}}`))
	}))
	defer wrongUID.Close()
	wrongUIDCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: wrongUID.Certificate().Raw})
	untrusted := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})

	for _, c := range []struct {
		name string
		hook admissionregistrationv1.MutatingWebhook
		want string
	}{
		{"garbage", mutatingWebhook("garbage.example.com", garbage.URL, garbageCA),
			`Internal error occurred: failed calling webhook "garbage.example.com": failed to call webhook: couldn't get version/kind; json parse error: invalid character 'o' in literal null (expecting 'u')`},
		{"patch that does not apply", mutatingWebhook("patch.example.com", badPatch.URL, badPatch.CAPEM),
			`Internal error occurred: replace operation does not apply: doc is missing path: /spec/nothing: missing value`},
		{"wrong uid", mutatingWebhook("uid.example.com", wrongUID.URL, wrongUIDCA),
			`Internal error occurred: failed calling webhook "uid.example.com": received invalid webhook response: expected response.uid=`},
		{"untrusted certificate", mutatingWebhook("tls.example.com", untrusted.URL, nil),
			`Internal error occurred: failed calling webhook "tls.example.com": failed to call webhook: Post "` + untrusted.URL + `/?timeout=10s": tls: failed to verify certificate: x509: certificate signed by unknown authority`},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := plugins(&staticSource{mutating: mutating("bad", c.hook)})
			cm := configMap("c", nil)
			st := statusOf(t, w.mutate(context.Background(), createConfigMap(cm)))
			if st.Code != 500 || !strings.HasPrefix(st.Message, c.want) {
				t.Errorf("got %d %q\nwant 500 %q", st.Code, st.Message, c.want)
			}
			if len(cm.Labels) != 0 || len(cm.Data) != 1 {
				t.Errorf("object changed: %v", cm)
			}
		})
	}
}

func TestSelectorsAndConditions(t *testing.T) {
	srv := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	nsSel := validatingWebhook("ns.example.com", srv.URL, srv.CAPEM)
	nsSel.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	objSel := validatingWebhook("obj.example.com", srv.URL, srv.CAPEM)
	objSel.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"watched": "yes"}}
	cond := validatingWebhook("cel.example.com", srv.URL, srv.CAPEM)
	cond.MatchConditions = []admissionregistrationv1.MatchCondition{
		{Name: "prefix", Expression: `object.metadata.name.startsWith("cel-")`},
		{Name: "not-admin", Expression: `!("system:masters" in request.userInfo.groups)`},
	}
	broken := validatingWebhook("broken.example.com", srv.URL, srv.CAPEM)
	broken.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "missing", Expression: `object.data.missing == "x"`}}

	for _, c := range []struct {
		name  string
		hook  admissionregistrationv1.ValidatingWebhook
		cm    *corev1.ConfigMap
		ns    string
		calls int
		err   string
	}{
		{"namespace matches", nsSel, configMap("a", nil), "prod", 1, ""},
		{"namespace does not", nsSel, configMap("a", nil), "team", 0, ""},
		{"namespace missing", nsSel, configMap("a", nil), "gone", 0, `namespaces "gone" not found`},
		{"object matches", objSel, configMap("a", map[string]string{"watched": "yes"}), "team", 1, ""},
		{"object does not", objSel, configMap("a", nil), "team", 0, ""},
		{"conditions hold", cond, configMap("cel-a", nil), "team", 1, ""},
		{"a condition is false", cond, configMap("other", nil), "team", 0, ""},
		{"a condition errors", broken, configMap("a", nil), "team", 0, `configmaps "a" is forbidden: expression 'object.data.missing == "x"' resulted in error: no such key: missing`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.Reset()
			w := plugins(&staticSource{validating: validating("v", c.hook), namespaces: map[string]map[string]string{"prod": {"env": "prod"}, "team": {"env": "dev"}}})
			c.cm.Namespace = c.ns
			err := w.validate(context.Background(), createConfigMap(c.cm))
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("error %v, want %q", err, c.err)
			}
			if n := len(srv.Requests()); n != c.calls {
				t.Fatalf("%d calls, want %d", n, c.calls)
			}
		})
	}
}

func TestNamespaceSelectorOnANamespace(t *testing.T) {
	srv := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	h := validatingWebhook("ns.example.com", srv.URL, srv.CAPEM)
	h.Rules = []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}}}}
	h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"watched": "yes"}}
	w := plugins(&staticSource{validating: validating("v", h)})
	for _, l := range []map[string]string{{"watched": "yes"}, nil} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new", Labels: l}}
		a := &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Namespace"), Resource: namespacesResource, Name: "new", Object: ns}
		if err := w.validate(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d calls, want 1 (its own labels decide)", n)
	}
}

func TestV1beta1Review(t *testing.T) {
	var got map[string]any
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&got)
		// v1beta1 answers are not checked for uid or kind, as upstream.
		w.Write([]byte(`{"response":{"allowed":false,"status":{"message":"old style","code":422}}}`))
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	h := validatingWebhook("beta.example.com", srv.URL, ca)
	h.AdmissionReviewVersions = []string{"v1beta1"}
	w := plugins(&staticSource{validating: validating("v", h)})
	st := statusOf(t, w.validate(context.Background(), createConfigMap(configMap("c", nil))))
	if st.Code != 422 || st.Message != `admission webhook "beta.example.com" denied the request: old style` {
		t.Fatalf("got %d %q", st.Code, st.Message)
	}
	if got["apiVersion"] != "admission.k8s.io/v1beta1" {
		t.Fatalf("sent %v", got["apiVersion"])
	}
}

func TestExemptAndNotReady(t *testing.T) {
	port := strconv.Itoa(closedPort(t))
	all := validatingWebhook("all.example.com", "https://127.0.0.1:"+port, nil)
	all.Rules = []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"*"},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}}}}
	w := plugins(&staticSource{validating: validating("v", all)})
	cfg := &admission.Attributes{Operation: admission.Create, Kind: admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"),
		Resource: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"), Name: "x",
		Object: &admissionregistrationv1.ValidatingWebhookConfiguration{}}
	if err := w.validate(context.Background(), cfg); err != nil {
		t.Fatalf("a webhook configuration must not pass through webhooks: %v", err)
	}
	if err := w.validate(context.Background(), createConfigMap(configMap("c", nil))); err == nil {
		t.Fatal("a configmap passed a failing webhook")
	}

	defer func(d time.Duration) { readyWait = d }(readyWait)
	readyWait = 200 * time.Millisecond
	w = plugins(&staticSource{unsynced: true})
	st := statusOf(t, w.validate(context.Background(), createConfigMap(configMap("c", nil))))
	if st.Code != 403 || st.Message != `configmaps "c" is forbidden: not yet ready to handle request` {
		t.Fatalf("got %d %q", st.Code, st.Message)
	}
}
