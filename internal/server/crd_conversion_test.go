package server

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// gizmoWebhook converts gizmos between v1 (spec.size) and v2
// (spec.dimensions.size) as a conversion webhook does.
func gizmoWebhook(t *testing.T, calls *atomic.Int32) *httptest.Server {
	return httptest.NewTLSServer(gizmoConversion(calls))
}

// gizmoConversion is gizmoWebhook's handler.
func gizmoConversion(calls *atomic.Int32) http.HandlerFunc {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		review := &apiextensionsv1.ConversionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "bad review", 400)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, o := range review.Request.Objects {
			u := &unstructured.Unstructured{}
			if err := json.Unmarshal(o.Raw, &u.Object); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			switch review.Request.DesiredAPIVersion {
			case "example.com/v2":
				if size, ok, _ := unstructured.NestedString(u.Object, "spec", "size"); ok {
					unstructured.RemoveNestedField(u.Object, "spec", "size")
					unstructured.SetNestedField(u.Object, size, "spec", "dimensions", "size")
				}
			case "example.com/v1":
				if size, ok, _ := unstructured.NestedString(u.Object, "spec", "dimensions", "size"); ok {
					unstructured.RemoveNestedField(u.Object, "spec", "dimensions")
					unstructured.SetNestedField(u.Object, size, "spec", "size")
				}
			}
			u.SetAPIVersion(review.Request.DesiredAPIVersion)
			data, _ := json.Marshal(u.Object)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
		}
		review.Response, review.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(review)
	})
}

// gizmoCRD is the gizmos CRD: v1 stored (spec.size), v2 served
// (spec.dimensions.size), converted by the webhook at url.
func gizmoCRD(url string, caBundle []byte) *apiextensionsv1.CustomResourceDefinition {
	obj := func(props map[string]apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: props}}}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Kind: "Gizmo"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: obj(map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "string"}})},
				{Name: "v2", Served: true, Schema: obj(map[string]apiextensionsv1.JSONSchemaProps{
					"dimensions": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "string"}}}})},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(url), CABundle: caBundle},
				ConversionReviewVersions: []string{"v1"},
			}},
		},
	}
}

func TestCustomResourceWebhookConversion(t *testing.T) {
	_, cfg := startServer(t)
	var calls atomic.Int32
	hook := gizmoWebhook(t, &calls)
	defer hook.Close()
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	crd := gizmoCRD(hook.URL+"/convert", caBundle)
	createCRD(t, cfg, crd)
	ctx := context.Background()
	dyn := dynamicClient(t, cfg)
	v1 := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}).Namespace("default")
	v2 := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "gizmos"}).Namespace("default")

	created, err := v2.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v2", "kind": "Gizmo", "metadata": map[string]interface{}{"name": "g", "labels": map[string]interface{}{"a": "b"}},
		"spec": map[string]interface{}{"dimensions": map[string]interface{}{"size": "L"}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create in v2: %v", err)
	}
	if s, _, _ := unstructured.NestedString(created.Object, "spec", "dimensions", "size"); s != "L" || created.GetAPIVersion() != "example.com/v2" {
		t.Errorf("created: %v", created.Object)
	}
	got, err := v1.Get(ctx, "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedString(got.Object, "spec", "size"); s != "L" || got.GetLabels()["a"] != "b" || got.GetUID() != created.GetUID() {
		t.Errorf("read in v1: %v", got.Object)
	}
	list, err := v2.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list v2: %v %v", err, list)
	}
	if s, _, _ := unstructured.NestedString(list.Items[0].Object, "spec", "dimensions", "size"); s != "L" {
		t.Errorf("listed in v2: %v", list.Items[0].Object)
	}
	if calls.Load() == 0 {
		t.Errorf("the webhook was never called")
	}

	// A webhook that fails makes reads fail with its message.
	hook.Close()
	_, err = v2.Get(ctx, "g", metav1.GetOptions{ResourceVersion: ""})
	if err == nil {
		// The decoded object may be shared from before; a write must convert.
		_, err = v2.Patch(ctx, "g", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"c":"d"}}}`), metav1.PatchOptions{})
	}
	if err == nil || !strings.Contains(err.Error(), "conversion webhook for example.com/v") {
		t.Errorf("with the webhook down: %v", err)
	}
}

// TestWatchEndsWhenConversionFails: a watch in a version the conversion
// webhook must produce, when the webhook fails for an event, ends with an
// ERROR event (the client watches again from the last event it saw), not
// silently without the event.
func TestWatchEndsWhenConversionFails(t *testing.T) {
	_, cfg := startServer(t)
	var calls atomic.Int32
	var failing atomic.Bool
	convert := gizmoConversion(&calls)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "conversion down", http.StatusInternalServerError)
			return
		}
		convert(w, r)
	}))
	defer hook.Close()
	createCRD(t, cfg, gizmoCRD(hook.URL+"/convert", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})))
	ctx := context.Background()
	dyn := dynamicClient(t, cfg)
	v1 := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}).Namespace("default")
	v2 := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "gizmos"}).Namespace("default")
	g, err := v1.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": map[string]interface{}{"name": "g"}, "spec": map[string]interface{}{"size": "S"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := v2.Watch(ctx, metav1.ListOptions{ResourceVersion: g.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	failing.Store(true)
	unstructured.SetNestedField(g.Object, "M", "spec", "size")
	if _, err := v1.Update(ctx, g, metav1.UpdateOptions{}); err != nil { // v1 is stored: no conversion
		t.Fatal(err)
	}
	select {
	case ev, ok := <-w.ResultChan():
		if !ok || ev.Type != watch.Error {
			t.Fatalf("after a failed conversion: %v %v, want an ERROR event", ev.Type, ok)
		}
		if st, isStatus := ev.Object.(*metav1.Status); !isStatus || st.Code != 500 {
			t.Errorf("the ERROR event: %#v", ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event after a failed conversion: the update was dropped")
	}
}
