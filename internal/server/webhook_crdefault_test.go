package server

import (
	"context"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission/webhook/webhooktest"
)

// TestWebhookPatchedCustomObjectIsDefaulted: a custom object a mutating
// webhook patched is defaulted again from its structural schema, as
// upstream decodes the patched object again: a defaulted field the patch
// removes comes back, and an object the patch adds gets its fields'
// defaults.
func TestWebhookPatchedCustomObjectIsDefaulted(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	jsonValue := func(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Type: "integer", Default: jsonValue("1")},
			"extra": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"mode": {Type: "string", Default: jsonValue(`"auto"`)},
				"name": {Type: "string"},
			}},
		}}}}}
	createCRD(t, cfg, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: schema}},
		},
	})
	pt := admissionv1.PatchTypeJSONPatch
	hook := webhooktest.New(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt,
			Patch: []byte(`[{"op":"remove","path":"/spec/replicas"},{"op":"add","path":"/spec/extra","value":{"name":"from-webhook"}}]`)}
	})
	url := hook.URL
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "gadgets.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: hook.CAPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"gadgets"}}}},
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gadgets := dynamicClient(t, cfg).Resource(k8sschema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}).Namespace("default")
	var created *unstructured.Unstructured
	for i := 0; ; i++ {
		var err error
		created, err = gadgets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget",
			"metadata": map[string]any{"name": "g" + strconv.Itoa(i)}, "spec": map[string]any{"replicas": int64(3)}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(hook.Requests()) > 0 || i == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(hook.Requests()) == 0 {
		t.Fatal("the webhook was never called")
	}
	stored, err := gadgets.Get(ctx, created.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := unstructured.NestedInt64(stored.Object, "spec", "replicas")
	mode, _, _ := unstructured.NestedString(stored.Object, "spec", "extra", "mode")
	name, _, _ := unstructured.NestedString(stored.Object, "spec", "extra", "name")
	if replicas != 1 || mode != "auto" || name != "from-webhook" {
		t.Errorf("stored spec %v, want replicas 1 (defaulted again), extra {mode: auto, name: from-webhook}", stored.Object["spec"])
	}
}
