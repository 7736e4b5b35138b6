package server

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// admissionHandler answers AdmissionReviews with answer.
func admissionHandler(calls *atomic.Int32, answer func(*admissionv1.AdmissionRequest, map[string]any) *admissionv1.AdmissionResponse) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		var obj map[string]any
		json.Unmarshal(review.Request.Object.Raw, &obj)
		resp := answer(review.Request, obj)
		resp.UID = review.Request.UID
		review.Request, review.Response = nil, resp
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&review)
	}
}

// TestCertManagerStyleWebhook: one webhook server, as cert-manager's,
// serves a CRD's conversion and its mutating and validating admission
// webhooks. A gizmo written in v2 reaches the admission webhooks in v1
// (the version their rules name, through the conversion webhook), the
// mutating one's default is stored and read back in v2, and the
// validating one refuses a bad gizmo with its message.
func TestCertManagerStyleWebhook(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	var conversions, mutations, validations atomic.Int32
	mux := http.NewServeMux()
	mux.Handle("/convert", gizmoConversion(&conversions))
	pt := admissionv1.PatchTypeJSONPatch
	mux.Handle("/mutate", admissionHandler(&mutations, func(r *admissionv1.AdmissionRequest, obj map[string]any) *admissionv1.AdmissionResponse {
		if size, _, _ := unstructured.NestedString(obj, "spec", "size"); size != "" || r.Kind.Version != "v1" {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: []byte(`[{"op":"add","path":"/spec/size","value":"M"}]`)}
	}))
	mux.Handle("/validate", admissionHandler(&validations, func(r *admissionv1.AdmissionRequest, obj map[string]any) *admissionv1.AdmissionResponse {
		if size, _, _ := unstructured.NestedString(obj, "spec", "size"); size == "XXL" && r.Kind.Version == "v1" {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "size XXL is not allowed"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	}))
	hook := httptest.NewTLSServer(mux)
	defer hook.Close()
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})

	createCRD(t, cfg, gizmoCRD(hook.URL+"/convert", caBundle))
	rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"gizmos"}}}}
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hook.URL + path), CABundle: caBundle}
	}
	none := ptr.To(admissionregistrationv1.SideEffectClassNone)
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.gizmos.example.com", ClientConfig: clientConfig("/mutate"),
			Rules: rules, SideEffects: none, AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.gizmos.example.com", ClientConfig: clientConfig("/validate"),
			Rules: rules, SideEffects: none, AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	v2 := dynamicClient(t, cfg).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "gizmos"}).Namespace("default")
	gizmo := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v2", "kind": "Gizmo", "metadata": map[string]any{"name": name}, "spec": spec}}
	}
	// Until both webhooks are in effect (a second at most).
	var name string
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		name = "plain-" + strconv.Itoa(i)
		created, err := v2.Create(ctx, gizmo(name, map[string]any{}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if size, _, _ := unstructured.NestedString(created.Object, "spec", "dimensions", "size"); size == "M" && validations.Load() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhooks never took effect: %v (mutations %d, validations %d)", created.Object, mutations.Load(), validations.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := v2.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedString(got.Object, "spec", "dimensions", "size"); size != "M" || got.GetAPIVersion() != "example.com/v2" {
		t.Errorf("read back in v2: %v", got.Object)
	}
	_, err = v2.Create(ctx, gizmo("huge", map[string]any{"dimensions": map[string]any{"size": "XXL"}}), metav1.CreateOptions{})
	if want := `admission webhook "validate.gizmos.example.com" denied the request: size XXL is not allowed`; err == nil || err.Error() != want || statusCode(err) != 403 {
		t.Errorf("a bad gizmo: %v (%d), want 403 %q", err, statusCode(err), want)
	}
	if conversions.Load() == 0 {
		t.Error("the conversion webhook was never called")
	}
}
