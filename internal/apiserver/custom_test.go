package apiserver

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/apiserver/custom"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/registry/all"
	"plainkube.dev/plainkube/internal/storage/memory"
)

// fooResource is a custom resource with two versions (None conversion),
// stored in v1, with a status subresource and one rule: spec.size >= 0.
func fooResource() *custom.Resource {
	version := func(v string) custom.Version {
		return custom.Version{
			Served: true, ListKind: "FooList",
			Resource: registry.Resource{
				Kind: schema.GroupVersionKind{Group: "example.com", Version: v, Kind: "Foo"}, Plural: "foos", Singular: "foo",
				Namespaced: true, Subresources: []string{"status"}, TracksGeneration: true,
				Strategy: registry.Strategy{Validate: func(obj runtime.Object) field.ErrorList {
					if n, _, _ := unstructured.NestedInt64(obj.(*unstructured.Unstructured).Object, "spec", "size"); n < 0 {
						return field.ErrorList{field.Invalid(field.NewPath("spec", "size"), n, "must be >= 0")}
					}
					return nil
				}},
			},
		}
	}
	return &custom.Resource{UID: "u1", Group: "example.com", Plural: "foos", StorageVersion: "v1", Established: true,
		Versions: []custom.Version{version("v1"), version("v2")}}
}

func TestSetCustomResources(t *testing.T) {
	s, h := startTestServer(t, Config{Storage: memory.New(memory.Options{}), Resources: all.Resources(), Logger: discardLogger()})
	do(h, "POST", "/api/v1/namespaces", "application/json", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`)
	const v1, v2 = "/apis/example.com/v1/namespaces/default/foos", "/apis/example.com/v2/namespaces/default/foos"
	if rec := do(h, "GET", v1, "", "", ""); rec.Code != 404 {
		t.Fatalf("before: %d", rec.Code)
	}
	s.SetCustomResources([]*custom.Resource{fooResource()})

	steps := []struct {
		name, method, path, ct, accept, body string
		code                                 int
		want                                 string
	}{
		{"create", "POST", v1, "application/json", "", `{"apiVersion":"example.com/v1","kind":"Foo","metadata":{"name":"a"},"spec":{"size":1},"status":{"x":1}}`, 201, `"generation":1`},
		{"get", "GET", v1 + "/a", "", "", "", 200, `"spec":{"size":1}`},
		{"read in v2", "GET", v2 + "/a", "", "", "", 200, `"apiVersion":"example.com/v2"`},
		{"list in v2", "GET", v2, "", "", "", 200, `"kind":"FooList"`},
		{"invalid", "POST", v1, "application/json", "", `{"apiVersion":"example.com/v1","kind":"Foo","metadata":{"name":"b"},"spec":{"size":-1}}`, 422, `spec.size: Invalid value: -1: must be \u003e= 0`},
		{"wrong kind", "POST", v1, "application/json", "", `{"apiVersion":"example.com/v1","kind":"Bar","metadata":{"name":"b"}}`, 400, "does not match the expected kind"},
		{"no protobuf bodies", "POST", v1, "application/vnd.kubernetes.protobuf", "", "k8s\x00", 415, "application/json, application/yaml"},
		{"no protobuf objects", "GET", v1 + "/a", "", "application/vnd.kubernetes.protobuf", "", 406, ""},
		{"no strategic merge patch", "PATCH", v1 + "/a", "application/strategic-merge-patch+json", "", `{}`, 415, "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"},
		{"spec patch in v2 bumps generation", "PATCH", v2 + "/a", "application/merge-patch+json", "", `{"spec":{"size":2}}`, 200, `"generation":2`},
		{"status patch", "PATCH", v1 + "/a/status", "application/merge-patch+json", "", `{"status":{"ok":true},"spec":{"size":9}}`, 200, `"spec":{"size":2},"status":{"ok":true,"x":1}}`},
		{"table", "GET", v1, "", "application/json;as=Table;v=v1;g=meta.k8s.io", "", 200, `"kind":"Table"`},
		{"discovery", "GET", "/apis/example.com/v1", "", "", "", 200, `"name":"foos/status"`},
		{"preferred version", "GET", "/apis/example.com", "", "", "", 200, `"preferredVersion":{"groupVersion":"example.com/v2","version":"v2"}`},
	}
	for _, st := range steps {
		rec := do(h, st.method, st.path, st.ct, st.accept, st.body)
		if rec.Code != st.code || !strings.Contains(rec.Body.String(), st.want) {
			t.Errorf("%s: %d %s, want %d and %s", st.name, rec.Code, rec.Body, st.code, st.want)
		}
	}
	// Stored once, in the storage version.
	kv, err := s.cfg.Storage.Get(t.Context(), "/registry/example.com/foos/default/a")
	if err != nil || !strings.Contains(string(kv.Value), `"apiVersion":"example.com/v1"`) {
		t.Errorf("stored: %v %s", err, kv.Value)
	}

	s.SetCustomResources(nil)
	if rec := do(h, "GET", v1+"/a", "", "", ""); rec.Code != 404 {
		t.Errorf("after removal: %d", rec.Code)
	}
	if rec := do(h, "GET", "/apis/example.com/v1", "", "", ""); rec.Code != 404 {
		t.Errorf("discovery after removal: %d", rec.Code)
	}
}
