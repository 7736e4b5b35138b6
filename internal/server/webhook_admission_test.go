package server

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission/webhook/webhooktest"
)

// webhookTestNamespace makes a namespace labelled test=<name>, which the
// test's webhooks select, so that tests do not see each other's.
func webhookTestNamespace(t *testing.T, cs kubernetes.Interface, name string) *metav1.LabelSelector {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": name}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &metav1.LabelSelector{MatchLabels: map[string]string{"test": name}}
}

var configMapsRule = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
}}

func validatingConfig(name string, hooks ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
}

func configMapWebhook(name, url string, ca []byte, ns *metav1.LabelSelector) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}, Rules: configMapsRule,
		NamespaceSelector: ns, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
	}
}

func newConfigMap(ns, name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: map[string]string{"k": "v"}}
}

// createUntil creates configmaps (name-0, name-1, …) until done says the
// answer is the awaited one, for at most a second; it returns the last
// one's name and answer and how long it took.
func createUntil(t *testing.T, cs kubernetes.Interface, ns, name string, labels map[string]string, done func(error) bool) (string, error, time.Duration) {
	t.Helper()
	start := time.Now()
	for i := 0; ; i++ {
		n := name + "-" + strconv.Itoa(i)
		_, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), newConfigMap(ns, n, labels), metav1.CreateOptions{})
		if done(err) || time.Since(start) > time.Second {
			return n, err, time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAdmissionWebhooks(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	vwc := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	mwc := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()

	t.Run("a validating webhook refuses a labelled configmap, in effect within a second", func(t *testing.T) {
		sel := webhookTestNamespace(t, cs, "wh-deny")
		hook := webhooktest.New(t, func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			var cm corev1.ConfigMap
			json.Unmarshal(r.Object.Raw, &cm)
			if cm.Labels["forbidden"] == "yes" {
				return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: 403, Message: "configmaps labelled forbidden=yes are not allowed"}}
			}
			return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"checked by deny.example.com"}}
		})
		if _, err := vwc.Create(ctx, validatingConfig("deny", configMapWebhook("deny.example.com", hook.URL+"/validate", hook.CAPEM, sel)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { vwc.Delete(ctx, "deny", metav1.DeleteOptions{}) })
		refused, err, took := createUntil(t, cs, "wh-deny", "labelled", map[string]string{"forbidden": "yes"}, func(err error) bool { return err != nil })
		if err == nil {
			t.Fatalf("a labelled configmap was admitted %v after the configuration was created", took)
		}
		t.Logf("the configuration took effect after %v", took)
		want := `admission webhook "deny.example.com" denied the request: configmaps labelled forbidden=yes are not allowed`
		if statusCode(err) != 403 || err.Error() != want {
			t.Fatalf("got %d %q\nwant 403 %q", statusCode(err), err.Error(), want)
		}
		if _, err := cs.CoreV1().ConfigMaps("wh-deny").Get(ctx, refused, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the refused configmap: %v", err)
		}
		// Unlabelled ones pass, with the webhook's warning.
		var got warnings
		wcfg := rest.CopyConfig(cfg)
		wcfg.WarningHandler = &got
		if _, err := clientset(t, wcfg).CoreV1().ConfigMaps("wh-deny").Create(ctx, newConfigMap("wh-deny", "plain", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := got.take(); len(got) != 1 || got[0] != "checked by deny.example.com" {
			t.Errorf("warnings %q", got)
		}
		// Its review request (the root CA publisher's kube-root-ca.crt
		// may come after it).
		calls := hook.Requests()
		i := slices.IndexFunc(calls, func(r *admissionv1.AdmissionRequest) bool { return r.Name == "plain" })
		if i < 0 {
			t.Fatalf("no review request for plain among %d", len(calls))
		}
		if r := calls[i]; r.UserInfo.Username == "" || r.Namespace != "wh-deny" ||
			r.Operation != admissionv1.Create || r.RequestResource == nil || r.RequestResource.Resource != "configmaps" {
			t.Errorf("review request %+v", r)
		}
	})

	t.Run("mutating webhooks patch in order and reinvoke", func(t *testing.T) {
		sel := webhookTestNamespace(t, cs, "wh-mutate")
		var mu sync.Mutex
		var seen []string
		observer := webhooktest.New(t, func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			var cm corev1.ConfigMap
			json.Unmarshal(r.Object.Raw, &cm)
			// Only the test's own: the root CA publisher writes
			// kube-root-ca.crt into the new namespace meanwhile.
			if cm.Labels["app"] == "x" {
				mu.Lock()
				seen = append(seen, "observer:"+cm.Labels["stamped"])
				mu.Unlock()
			}
			return &admissionv1.AdmissionResponse{Allowed: true}
		})
		stamper := webhooktest.New(t, func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			pt := admissionv1.PatchTypeJSONPatch
			return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt,
				Patch: []byte(`[{"op":"add","path":"/metadata/labels/stamped","value":"yes"}]`)}
		})
		mutating := func(name, url string, ca []byte, policy admissionregistrationv1.ReinvocationPolicyType) admissionregistrationv1.MutatingWebhook {
			return admissionregistrationv1.MutatingWebhook{
				Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}, Rules: configMapsRule,
				NamespaceSelector: sel, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
				ReinvocationPolicy: &policy,
			}
		}
		// Configurations run in the order of their names: the observer
		// first, then the stamper; the observer (IfNeeded) is asked again.
		for _, c := range []*admissionregistrationv1.MutatingWebhookConfiguration{
			{ObjectMeta: metav1.ObjectMeta{Name: "a-observer"}, Webhooks: []admissionregistrationv1.MutatingWebhook{mutating("observer.example.com", observer.URL, observer.CAPEM, admissionregistrationv1.IfNeededReinvocationPolicy)}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b-stamper"}, Webhooks: []admissionregistrationv1.MutatingWebhook{mutating("stamper.example.com", stamper.URL, stamper.CAPEM, admissionregistrationv1.NeverReinvocationPolicy)}},
		} {
			if _, err := mwc.Create(ctx, c, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mwc.Delete(ctx, c.Name, metav1.DeleteOptions{}) })
		}
		// Wait until both configurations are in force, then look at one
		// create alone: a create while the second configuration arrives
		// may see the webhooks change between its invocations.
		deadline := time.Now().Add(5 * time.Second)
		for i := 0; len(stamper.Requests()) == 0 || len(observer.Requests()) == 0; i++ {
			if time.Now().After(deadline) {
				t.Fatal("the mutating webhooks were not called within 5 seconds")
			}
			if _, err := cs.CoreV1().ConfigMaps("wh-mutate").Create(ctx, newConfigMap("wh-mutate", "warm-"+strconv.Itoa(i), map[string]string{"app": "x"}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		mu.Lock()
		seen = nil
		mu.Unlock()
		cm, err := cs.CoreV1().ConfigMaps("wh-mutate").Create(ctx, newConfigMap("wh-mutate", "m", map[string]string{"app": "x"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Labels["stamped"] != "yes" || cm.Labels["app"] != "x" {
			t.Fatalf("stored labels %v", cm.Labels)
		}
		mu.Lock()
		got := strings.Join(seen, ",")
		mu.Unlock()
		if got != "observer:,observer:yes" {
			t.Fatalf("the observer saw %q, want it called before and after the stamp", got)
		}
	})

	t.Run("failure policy with an unreachable webhook", func(t *testing.T) {
		sel := webhookTestNamespace(t, cs, "wh-down")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		hook := configMapWebhook("deny-all.example.com", "https://127.0.0.1:"+port+"/deny", nil, sel)
		created, err := vwc.Create(ctx, validatingConfig("deny-all", hook), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { vwc.Delete(ctx, "deny-all", metav1.DeleteOptions{}) })
		_, err, _ = createUntil(t, cs, "wh-down", "fail", nil, func(err error) bool { return err != nil })
		want := `Internal error occurred: failed calling webhook "deny-all.example.com": failed to call webhook: Post "https://127.0.0.1:` + port + `/deny?timeout=10s": dial tcp 127.0.0.1:` + port + `: connect: connection refused`
		if statusCode(err) != 500 || err == nil || err.Error() != want {
			t.Fatalf("got %d %v\nwant 500 %q", statusCode(err), err, want)
		}
		created.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		if _, err := vwc.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err, took := createUntil(t, cs, "wh-down", "ignore", nil, func(err error) bool { return err == nil }); err != nil {
			t.Fatalf("with failurePolicy Ignore, after %v: %v", took, err)
		}
	})

	t.Run("a slow webhook hits its timeout", func(t *testing.T) {
		sel := webhookTestNamespace(t, cs, "wh-slow")
		release := make(chan struct{})
		defer close(release)
		slow := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
			return &admissionv1.AdmissionResponse{Allowed: true}
		})
		hook := configMapWebhook("slow.example.com", slow.URL, slow.CAPEM, sel)
		hook.TimeoutSeconds = ptr.To(int32(1))
		if _, err := vwc.Create(ctx, validatingConfig("slow", hook), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { vwc.Delete(ctx, "slow", metav1.DeleteOptions{}) })
		var err error
		var took time.Duration
		for i := 0; i < 20; i++ {
			start := time.Now()
			_, err = cs.CoreV1().ConfigMaps("wh-slow").Create(ctx, newConfigMap("wh-slow", "s"+strconv.Itoa(i), nil), metav1.CreateOptions{})
			took = time.Since(start)
			if err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err == nil || !strings.HasSuffix(err.Error(), `/?timeout=1s": context deadline exceeded`) || !strings.Contains(err.Error(), `failed calling webhook "slow.example.com"`) {
			t.Fatalf("got %v", err)
		}
		if took > 3*time.Second {
			t.Fatalf("the refused create took %v with a 1 s timeout", took)
		}
	})

	t.Run("dry run", func(t *testing.T) {
		sel := webhookTestNamespace(t, cs, "wh-dry")
		hook := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: true}
		})
		h := configMapWebhook("dry.example.com", hook.URL, hook.CAPEM, sel)
		h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		// The v1 API refuses webhooks with side effects on dry runs.
		if _, err := vwc.Create(ctx, validatingConfig("dry", h), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Fatalf("sideEffects Some: %v", err)
		}
		h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)
		if _, err := vwc.Create(ctx, validatingConfig("dry", h), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { vwc.Delete(ctx, "dry", metav1.DeleteOptions{}) })
		// The calls for this test's configmap: the root CA publisher's
		// kube-root-ca.crt in the new namespace may reach the webhook too.
		callsForD := func() []*admissionv1.AdmissionRequest {
			var out []*admissionv1.AdmissionRequest
			for _, c := range hook.Requests() {
				if c.Name == "d" {
					out = append(out, c)
				}
			}
			return out
		}
		deadline := time.Now().Add(time.Second)
		for len(callsForD()) == 0 && time.Now().Before(deadline) {
			if _, err := cs.CoreV1().ConfigMaps("wh-dry").Create(ctx, newConfigMap("wh-dry", "d", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		calls := callsForD()
		if len(calls) == 0 || calls[0].DryRun == nil || !*calls[0].DryRun {
			t.Fatalf("the webhook was not told of the dry run: %v", calls)
		}
		if _, err := cs.CoreV1().ConfigMaps("wh-dry").Get(ctx, "d", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a dry run stored the configmap: %v", err)
		}
	})
}

// TestAdmissionWebhookEquivalentVersions: a mutating webhook whose rule
// names v1 of a custom resource is called, with matchPolicy Equivalent,
// for a write in v2: it sees the object in v1 (requestKind v2), and its
// patch lands on the v2 object stored, pruned of what the schema does not
// declare.
func TestAdmissionWebhookEquivalentVersions(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)}}}}
	createCRD(t, cfg, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v2", Served: true, Schema: schema},
			},
		},
	})
	pt := admissionv1.PatchTypeJSONPatch
	hook := webhooktest.New(t, func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{"seen-as":"` + r.Kind.Version + `"}},{"op":"add","path":"/undeclared","value":"x"}]`)}
	})
	rule := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}}
	url := hook.URL
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "widgets.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: hook.CAPEM},
			Rules: rule, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v2 := dynamicClient(t, cfg).Resource(k8sschema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}).Namespace("default")
	var created *unstructured.Unstructured
	for i := 0; ; i++ {
		var err error
		created, err = v2.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v2", "kind": "Widget",
			"metadata": map[string]any{"name": "w" + strconv.Itoa(i)}, "spec": map[string]any{"size": "L"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(hook.Requests()) > 0 || i == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	calls := hook.Requests()
	if len(calls) != 1 {
		t.Fatalf("%d calls of the webhook", len(calls))
	}
	r := calls[0]
	var sent map[string]any
	json.Unmarshal(r.Object.Raw, &sent)
	if r.Kind.Version != "v1" || r.Resource.Version != "v1" || r.RequestKind.Version != "v2" || r.RequestResource.Version != "v2" || sent["apiVersion"] != "example.com/v1" {
		t.Errorf("kind %v resource %v requestKind %v requestResource %v, object %v", r.Kind, r.Resource, r.RequestKind, r.RequestResource, sent["apiVersion"])
	}
	if created.GetAPIVersion() != "example.com/v2" || created.GetLabels()["seen-as"] != "v1" {
		t.Errorf("stored %v", created.Object)
	}
	// A field the schema does not declare, added by the webhook, is pruned.
	if _, ok := created.Object["undeclared"]; ok {
		t.Errorf("a webhook's undeclared field was stored: %v", created.Object)
	}
}
