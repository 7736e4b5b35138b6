package openapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	protomodels "k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"plainkube.dev/plainkube/internal/registry"
)

var (
	podGVK        = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	widgetGVK     = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
)

func testResources() []registry.Resource {
	return []registry.Resource{
		{Kind: podGVK, Plural: "pods", Namespaced: true, Subresources: []string{"status", "binding", "eviction", "ephemeralcontainers", "log", "exec", "attach", "portforward", "proxy"}},
		{Kind: deploymentGVK, Plural: "deployments", Namespaced: true, Subresources: []string{"status", "scale"}},
		{Kind: configMapGVK, Plural: "configmaps", Namespaced: true},
		{Kind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Plural: "namespaces", Subresources: []string{"status", "finalize"}},
		{Kind: schema.GroupVersionKind{Version: "v1", Kind: "Binding"}, Plural: "bindings", Namespaced: true, Verbs: []string{"create"}},
	}
}

// allBuiltinResources serves every kind in client-go's scheme that has a
// list kind, as a namespaced resource with a status subresource.
func allBuiltinResources() []registry.Resource {
	known := scheme.Scheme.AllKnownTypes()
	var out []registry.Resource
	for gvk := range known {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		if _, ok := known[gvk.GroupVersion().WithKind(gvk.Kind+"List")]; !ok {
			continue
		}
		out = append(out, registry.Resource{Kind: gvk, Plural: strings.ToLower(gvk.Kind) + "s", Namespaced: true, Subresources: []string{"status"}})
	}
	slices.SortFunc(out, func(a, b registry.Resource) int { return strings.Compare(a.Kind.String(), b.Kind.String()) })
	return out
}

func get(t *testing.T, h http.Handler, path string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// v3Doc fetches one group version's document through the index, the way
// clients do.
func fetchV3(t *testing.T, b *Builder, key string) *spec3.OpenAPI {
	t.Helper()
	rec := get(t, b, "/openapi/v3", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi/v3: %d %s", rec.Code, rec.Body)
	}
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &index); err != nil {
		t.Fatal(err)
	}
	entry, ok := index.Paths[key]
	if !ok {
		t.Fatalf("index has no %s: %s", key, rec.Body)
	}
	rec = get(t, b, entry.ServerRelativeURL, map[string]string{"Accept": "application/json"})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", entry.ServerRelativeURL, rec.Code, rec.Body)
	}
	doc := &spec3.OpenAPI{}
	if err := json.Unmarshal(rec.Body.Bytes(), doc); err != nil {
		t.Fatalf("parsing %s: %v", key, err)
	}
	return doc
}

func TestV3PodSchema(t *testing.T) {
	b := New(testResources(), scheme.Scheme)
	doc := fetchV3(t, b, "api/v1")
	if doc.Version != "3.0.0" {
		t.Errorf("openapi = %q", doc.Version)
	}
	schemas := doc.Components.Schemas
	pod := schemas["io.k8s.api.core.v1.Pod"]
	if pod == nil {
		t.Fatal("no io.k8s.api.core.v1.Pod")
	}
	if want := (corev1.Pod{}).SwaggerDoc()[""]; pod.Description != want {
		t.Errorf("Pod description = %q, want %q", pod.Description, want)
	}
	var gvks []map[string]string
	if err := pod.Extensions.GetObject(extGVK, &gvks); err != nil || len(gvks) != 1 || gvks[0]["kind"] != "Pod" || gvks[0]["version"] != "v1" {
		t.Errorf("Pod GVK extension = %v (%v)", gvks, err)
	}
	specRef := pod.Properties["spec"].AllOf[0].Ref.String()
	if specRef != "#/components/schemas/io.k8s.api.core.v1.PodSpec" {
		t.Fatalf("Pod spec ref = %q", specRef)
	}
	podSpec := schemas["io.k8s.api.core.v1.PodSpec"]
	containers := podSpec.Properties["containers"]
	if key, _ := containers.Extensions.GetString(extPatchMergeKey); key != "name" {
		t.Errorf("containers patch merge key = %q", key)
	}
	if s, _ := containers.Extensions.GetString(extPatchStrategy); s != "merge" {
		t.Errorf("containers patch strategy = %q", s)
	}
	if lt, _ := containers.Extensions.GetString(extListType); lt != "map" {
		t.Errorf("containers list type = %q", lt)
	}
	if want := (corev1.PodSpec{}).SwaggerDoc()["containers"]; containers.Description != want || want == "" {
		t.Errorf("containers description = %q, want %q", containers.Description, want)
	}
	// Topology from upstream: container ports are keyed by port and protocol.
	ports := schemas["io.k8s.api.core.v1.Container"].Properties["ports"]
	if keys, _ := ports.Extensions.GetStringSlice(extListMapKeys); !slices.Equal(keys, []string{"containerPort", "protocol"}) {
		t.Errorf("ports list-map-keys = %v", keys)
	}
	if d := schemas["io.k8s.api.core.v1.ContainerPort"].Properties["protocol"].Default; d != "TCP" {
		t.Errorf("ContainerPort.protocol default = %v", d)
	}
	// Special types.
	if s := schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]; s == nil || s.Format != "date-time" || !s.Type.Contains("string") {
		t.Errorf("Time = %+v", s)
	}
	if s := schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]; s == nil || s.Format != "int-or-string" || len(s.OneOf) != 2 {
		t.Errorf("IntOrString = %+v", s)
	}
	if s := schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]; s == nil || len(s.OneOf) != 2 {
		t.Errorf("Quantity = %+v", s)
	}
	cm := schemas["io.k8s.api.core.v1.ConfigMap"]
	if p := cm.Properties["binaryData"]; p.AdditionalProperties == nil || p.AdditionalProperties.Schema.Format != "byte" {
		t.Errorf("ConfigMap.binaryData = %+v", p)
	}
	if p := schemas["io.k8s.api.core.v1.Container"].Properties["resources"]; len(p.AllOf) != 1 {
		t.Errorf("Container.resources = %+v", p)
	}
	// Every $ref in the document resolves inside it.
	raw, _ := json.Marshal(doc)
	checkRefs(t, raw, "#/components/schemas/", schemas)
	for _, name := range []string{"io.k8s.apimachinery.pkg.apis.meta.v1.Status", "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta", "io.k8s.api.core.v1.PodList", "io.k8s.api.policy.v1.Eviction", "io.k8s.api.core.v1.Binding"} {
		if schemas[name] == nil {
			t.Errorf("components.schemas has no %s", name)
		}
	}
}

// checkRefs fails if any $ref in the JSON document raw does not resolve
// to a key of defs (under prefix) or, for v2, of its parameters section.
func checkRefs[S any](t *testing.T, raw []byte, prefix string, defs map[string]S) {
	t.Helper()
	var doc struct {
		Parameters map[string]any `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	dangling := 0
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				_, isDef := defs[strings.TrimPrefix(ref, prefix)]
				_, isParam := doc.Parameters[strings.TrimPrefix(ref, "#/parameters/")]
				if !(strings.HasPrefix(ref, prefix) && isDef) && !(strings.HasPrefix(ref, "#/parameters/") && isParam) {
					if dangling++; dangling <= 5 {
						t.Errorf("dangling $ref %s", ref)
					}
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	walk(v)
}

func TestV3Paths(t *testing.T) {
	b := New(testResources(), scheme.Scheme)
	doc := fetchV3(t, b, "api/v1")
	want := map[string][]string{
		"/api/v1/namespaces/{namespace}/pods":        {"get listCoreV1NamespacedPod list", "post createCoreV1NamespacedPod post", "delete deleteCoreV1CollectionNamespacedPod deletecollection"},
		"/api/v1/namespaces/{namespace}/pods/{name}": {"get readCoreV1NamespacedPod get", "put replaceCoreV1NamespacedPod put", "patch patchCoreV1NamespacedPod patch", "delete deleteCoreV1NamespacedPod delete"},
		"/api/v1/pods": {"get listCoreV1PodForAllNamespaces list"},
		"/api/v1/namespaces/{namespace}/pods/{name}/status":       {"get readCoreV1NamespacedPodStatus get", "put replaceCoreV1NamespacedPodStatus put", "patch patchCoreV1NamespacedPodStatus patch"},
		"/api/v1/namespaces/{namespace}/pods/{name}/binding":      {"post createCoreV1NamespacedPodBinding post"},
		"/api/v1/namespaces/{namespace}/pods/{name}/eviction":     {"post createCoreV1NamespacedPodEviction post"},
		"/api/v1/namespaces/{namespace}/pods/{name}/log":          {"get readCoreV1NamespacedPodLog get"},
		"/api/v1/namespaces/{namespace}/pods/{name}/exec":         {"get connectCoreV1GetNamespacedPodExec connect", "post connectCoreV1PostNamespacedPodExec connect"},
		"/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}": {"get connectCoreV1GetNamespacedPodProxyWithPath connect"},
		"/api/v1/namespaces/{name}":                               {"get readCoreV1Namespace get"},
		"/api/v1/namespaces/{name}/finalize":                      {"put replaceCoreV1NamespaceFinalize put"},
		"/api/v1/":                                                {"get getCoreV1APIResources "},
		"/api/v1/namespaces/{namespace}/bindings":                 {"post createCoreV1NamespacedBinding post"},
	}
	for path, ops := range want {
		p := doc.Paths.Paths[path]
		if p == nil {
			t.Errorf("no path %s", path)
			continue
		}
		for _, w := range ops {
			f := strings.Split(w, " ")
			var op *spec3.Operation
			switch f[0] {
			case "get":
				op = p.Get
			case "put":
				op = p.Put
			case "post":
				op = p.Post
			case "patch":
				op = p.Patch
			case "delete":
				op = p.Delete
			}
			if op == nil {
				t.Errorf("%s: no %s", path, f[0])
				continue
			}
			if op.OperationId != f[1] {
				t.Errorf("%s %s: operationId %q, want %q", f[0], path, op.OperationId, f[1])
			}
			if a, _ := op.Extensions.GetString(extAction); a != f[2] {
				t.Errorf("%s %s: action %q, want %q", f[0], path, a, f[2])
			}
		}
	}
	if doc.Paths.Paths["/api/v1/bindings"] != nil || doc.Components.Schemas[".v1.Binding"] != nil {
		t.Error("create-only Binding got list paths or a made-up schema")
	}
	// Responses and bodies refer to the kind.
	read := doc.Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}"].Get
	if ref := read.Responses.StatusCodeResponses[200].Content["application/json"].Schema.Ref.String(); ref != "#/components/schemas/io.k8s.api.core.v1.Pod" {
		t.Errorf("read response ref = %q", ref)
	}
	// put and post take dryRun, fieldManager and fieldValidation.
	for _, op := range []*spec3.Operation{doc.Paths.Paths["/api/v1/namespaces/{namespace}/pods"].Post, doc.Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}"].Put} {
		for _, name := range []string{"dryRun", "fieldManager", "fieldValidation"} {
			if !hasQueryParam(op, name) {
				t.Errorf("%s has no %s", op.OperationId, name)
			}
		}
	}
	// Scale is its own kind.
	apps := fetchV3(t, b, "apis/apps/v1")
	scale := apps.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
	if scale == nil || scale.Get == nil || scale.Get.OperationId != "readAppsV1NamespacedDeploymentScale" {
		t.Fatalf("scale path = %+v", scale)
	}
	var gvk map[string]string
	if err := scale.Patch.Extensions.GetObject(extGVK, &gvk); err != nil || gvk["group"] != "autoscaling" || gvk["kind"] != "Scale" {
		t.Errorf("scale patch GVK = %v %v", gvk, err)
	}
	if apps.Components.Schemas["io.k8s.api.autoscaling.v1.Scale"] == nil {
		t.Error("apps/v1 has no Scale schema")
	}
}

func hasQueryParam(op *spec3.Operation, name string) bool {
	for _, p := range op.Parameters {
		if p.Name == name && p.In == "query" {
			return true
		}
	}
	return false
}

// TestKubectlFieldValidation mirrors kubectl's check (cli-runtime's
// query-param verifier): the PATCH operation tagged with the kind's GVK
// must declare the fieldValidation query parameter. kubectl stops at the
// first matching PATCH, in map order, so every one must.
func TestKubectlFieldValidation(t *testing.T) {
	b := New(testResources(), scheme.Scheme)
	for key, gvk := range map[string]schema.GroupVersionKind{"apis/apps/v1": deploymentGVK, "api/v1": podGVK} {
		doc := fetchV3(t, b, key)
		found := 0
		for path, p := range doc.Paths.Paths {
			if p.Patch == nil {
				continue
			}
			var got map[string]string
			if err := p.Patch.Extensions.GetObject(extGVK, &got); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if got["group"] != gvk.Group || got["version"] != gvk.Version || got["kind"] != gvk.Kind {
				continue
			}
			found++
			if !hasQueryParam(p.Patch, "fieldValidation") {
				t.Errorf("PATCH %s lacks fieldValidation", path)
			}
			for _, mt := range []string{mtJSONPatch, mtMergePatch, mtStrategic, mtApply} {
				if _, ok := p.Patch.RequestBody.Content[mt]; !ok {
					t.Errorf("PATCH %s does not accept %s", path, mt)
				}
			}
		}
		if found == 0 {
			t.Errorf("%s: no PATCH for %v", key, gvk)
		}
	}
}

// TestClientGoOpenAPI3 reads the documents with client-go's OpenAPI v3
// client, as kubectl does.
func TestClientGoOpenAPI3(t *testing.T) {
	b := New(testResources(), scheme.Scheme)
	srv := httptest.NewServer(b)
	defer srv.Close()
	rc, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{
		GroupVersion: &schema.GroupVersion{}, NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	root := openapi3.NewRoot(openapi.NewClient(rc))
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(gvs, deploymentGVK.GroupVersion()) || !slices.Contains(gvs, podGVK.GroupVersion()) {
		t.Errorf("group versions = %v", gvs)
	}
	doc, err := root.GVSpec(deploymentGVK.GroupVersion())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for name, s := range doc.Components.Schemas {
		var gvks []map[string]string
		if s.Extensions.GetObject(extGVK, &gvks) != nil {
			continue
		}
		for _, g := range gvks {
			if g["group"] == "apps" && g["version"] == "v1" && g["kind"] == "Deployment" {
				found = name == "io.k8s.api.apps.v1.Deployment"
			}
		}
	}
	if !found {
		t.Error("apps/v1 document has no io.k8s.api.apps.v1.Deployment with its GVK")
	}
	if _, err := root.GVSpec(schema.GroupVersion{Group: "nope", Version: "v1"}); err == nil {
		t.Error("GVSpec of an unserved group version succeeded")
	}
	// The protobuf form of a v3 document, which client-go can also ask for.
	gvClient := mustPaths(t, rc)["apis/apps/v1"]
	pb, err := gvClient.Schema(openapi.ContentTypeOpenAPIV3PB)
	if err != nil {
		t.Fatal(err)
	}
	v3 := &openapi_v3.Document{}
	if err := proto.Unmarshal(pb, v3); err != nil {
		t.Fatal(err)
	}
	if _, err := protomodels.NewOpenAPIV3Data(v3); err != nil {
		t.Fatal(err)
	}
}

func mustPaths(t *testing.T, rc rest.Interface) map[string]openapi.GroupVersion {
	t.Helper()
	paths, err := openapi.NewClient(rc).Paths()
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestV2Protobuf decodes /openapi/v2 as kubectl does (protobuf) and builds
// the models its client-side validation and explain fall back to.
func TestV2Protobuf(t *testing.T) {
	b := New(allBuiltinResources(), scheme.Scheme)
	rec := get(t, b, "/openapi/v2", map[string]string{"Accept": mtV2Protobuf})
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != mtV2ProtobufLegacy {
		t.Fatalf("GET /openapi/v2: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(rec.Body.Bytes(), doc); err != nil {
		t.Fatal(err)
	}
	models, err := protomodels.NewOpenAPIData(doc)
	if err != nil {
		t.Fatal(err)
	}
	pod, ok := models.LookupModel("io.k8s.api.core.v1.Pod").(*protomodels.Kind)
	if !ok {
		t.Fatalf("Pod model = %T", models.LookupModel("io.k8s.api.core.v1.Pod"))
	}
	if pod.GetDescription() == "" || pod.Fields["spec"] == nil {
		t.Errorf("Pod model = %+v", pod)
	}
	// kubectl's v2 query-param check: the patch operation's parameters,
	// inline or referring to the document's parameters section.
	global := map[string]*openapi_v2.NamedParameter{}
	for _, p := range doc.GetParameters().GetAdditionalProperties() {
		global["#/parameters/"+p.GetName()] = p
	}
	found := false
	for _, item := range doc.GetPaths().GetPath() {
		op := item.GetValue().GetPatch()
		if item.GetName() != "/apis/apps/v1/namespaces/{namespace}/deployments/{name}" || op == nil {
			continue
		}
		for _, p := range op.GetParameters() {
			if p.GetParameter().GetNonBodyParameter().GetQueryParameterSubSchema().GetName() == "fieldValidation" {
				found = true
			}
			if g := global[p.GetJsonReference().GetXRef()]; g.GetValue().GetNonBodyParameter().GetQueryParameterSubSchema().GetName() == "fieldValidation" {
				found = true
			}
		}
	}
	if !found {
		t.Error("v2: deployment PATCH has no fieldValidation")
	}

	// JSON on request, with the same content.
	rec = get(t, b, "/openapi/v2", map[string]string{"Accept": "application/json"})
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("GET /openapi/v2 as JSON: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	sw := &spec.Swagger{}
	if err := json.Unmarshal(rec.Body.Bytes(), sw); err != nil {
		t.Fatal(err)
	}
	checkRefs(t, rec.Body.Bytes(), "#/definitions/", sw.Definitions)
	if sw.Definitions["io.k8s.api.core.v1.PodSpec"].Properties["containers"].Extensions[extPatchMergeKey] != "name" {
		t.Error("v2: containers has no merge key")
	}
}

// TestAllBuiltinV3 builds every built-in group version and parses each
// document with gnostic, which is stricter than encoding/json.
func TestAllBuiltinV3(t *testing.T) {
	b := New(allBuiltinResources(), scheme.Scheme)
	rec := get(t, b, "/openapi/v3", nil)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Paths) < 20 {
		t.Fatalf("only %d group versions", len(index.Paths))
	}
	for key, e := range index.Paths {
		rec := get(t, b, e.ServerRelativeURL, map[string]string{"Accept": mtV3Protobuf})
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", key, rec.Code, rec.Body)
		}
		doc := &openapi_v3.Document{}
		if err := proto.Unmarshal(rec.Body.Bytes(), doc); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if _, err := protomodels.NewOpenAPIV3Data(doc); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
}

// TestStrategicMergeFromV3 computes a patch the way kubectl's client-side
// apply does when the server publishes v3 with strategic merge support.
func TestStrategicMergeFromV3(t *testing.T) {
	b := New(testResources(), scheme.Scheme)
	schemas, err := b.V3Schemas()
	if err != nil {
		t.Fatal(err)
	}
	meta := strategicpatch.PatchMetaFromOpenAPIV3{SchemaList: schemas, Schema: schemas["io.k8s.api.apps.v1.Deployment"]}
	original := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}}}`)
	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"b","image":"b:2"}]}}}}`)
	merged, err := strategicpatch.StrategicMergePatchUsingLookupPatchMeta(original, patch, meta)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(merged, &got); err != nil {
		t.Fatal(err)
	}
	cs := got.Spec.Template.Spec.Containers
	if len(cs) != 2 || cs[0].Image != "a:1" || cs[1].Image != "b:2" {
		t.Errorf("merged containers = %+v (lists were replaced, not merged by name)", cs)
	}
}

// TestTypeConverter builds a server-side-apply type converter from the
// v3 schemas; list keys must be upstream's (two ports may share a number).
func TestTypeConverter(t *testing.T) {
	b := New(testResources(), scheme.Scheme)
	schemas, err := b.V3Schemas()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := managedfields.NewTypeConverter(schemas, false)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "dns",
			Ports: []corev1.ContainerPort{
				{ContainerPort: 53, Protocol: corev1.ProtocolUDP}, {ContainerPort: 53, Protocol: corev1.ProtocolTCP},
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("metrics")}}},
			Resources:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("170Mi")}},
		}}},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: u}); err != nil {
		t.Fatal(err)
	}
}

func TestHandlerCaching(t *testing.T) {
	b := New(testResources(), scheme.Scheme)
	rec := get(t, b, "/openapi/v3", nil)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &index); err != nil {
		t.Fatal(err)
	}
	url := index.Paths["apis/apps/v1"].ServerRelativeURL
	if !strings.HasPrefix(url, "/openapi/v3/apis/apps/v1?hash=") {
		t.Fatalf("serverRelativeURL = %q", url)
	}
	rec = get(t, b, url, nil)
	if cc := rec.Header().Get("Cache-Control"); !strings.Contains(cc, "immutable") {
		t.Errorf("Cache-Control = %q", cc)
	}
	etag := rec.Header().Get("Etag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if rec := get(t, b, "/openapi/v3/apis/apps/v1", map[string]string{"If-None-Match": etag}); rec.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", rec.Code)
	}
	if rec := get(t, b, "/openapi/v3/apis/apps/v1?hash=stale", nil); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != url {
		t.Errorf("stale hash: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if rec := get(t, b, "/openapi/v3/apis/nope/v1", nil); rec.Code != http.StatusNotFound {
		t.Errorf("unknown group version: %d", rec.Code)
	}
	if rec := get(t, b, "/openapi/v2", map[string]string{"Accept": "text/html"}); rec.Code != http.StatusNotAcceptable {
		t.Errorf("v2 as text/html: %d", rec.Code)
	}
	v2 := get(t, b, "/openapi/v2", map[string]string{"Accept": mtV2ProtobufLegacy})
	if v2.Header().Get("Content-Type") != mtV2ProtobufLegacy {
		t.Errorf("legacy protobuf accept: %q", v2.Header().Get("Content-Type"))
	}
	if rec := get(t, b, "/openapi/v2", map[string]string{"Accept": mtV2Protobuf, "If-None-Match": v2.Header().Get("Etag")}); rec.Code != http.StatusNotModified {
		t.Errorf("v2 If-None-Match: %d", rec.Code)
	}
	// Compressed on request, same content.
	plain := get(t, b, url, nil)
	zipped := get(t, b, url, map[string]string{"Accept-Encoding": "gzip"})
	if zipped.Header().Get("Content-Encoding") != "gzip" || zipped.Header().Get("Etag") == plain.Header().Get("Etag") {
		t.Fatalf("gzip: encoding %q, etag %q", zipped.Header().Get("Content-Encoding"), zipped.Header().Get("Etag"))
	}
	zr, err := gzip.NewReader(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(unzipped, plain.Body.Bytes()) {
		t.Errorf("gunzipped body differs (%v)", err)
	}
}

func TestSetResourcesAndCustomResources(t *testing.T) {
	b := New(testResources(), scheme.Scheme)
	before := get(t, b, "/openapi/v3", nil).Body.String()
	if strings.Contains(before, "apis/example.com/v1") {
		t.Fatal("custom group served too early")
	}
	b.SetResources(append(testResources(), registry.Resource{Kind: widgetGVK, Plural: "widgets", Namespaced: true, Subresources: []string{"status"}}))
	doc := fetchV3(t, b, "apis/example.com/v1")
	w := doc.Components.Schemas["com.example.v1.Widget"]
	if w == nil {
		t.Fatalf("no Widget schema: %v", doc.Components.Schemas)
	}
	if v, _ := w.Extensions.GetBool(extPreserveFields); !v {
		t.Error("Widget does not preserve unknown fields")
	}
	patch := doc.Paths.Paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"].Patch
	if patch.OperationId != "patchExampleComV1NamespacedWidget" || !hasQueryParam(patch, "fieldValidation") {
		t.Errorf("Widget patch = %s", patch.OperationId)
	}
	if _, ok := patch.RequestBody.Content[mtStrategic]; ok {
		t.Error("custom resource accepts strategic merge patch")
	}
	raw, _ := json.Marshal(doc)
	checkRefs(t, raw, "#/components/schemas/", doc.Components.Schemas)

	// A structural schema from the CRD replaces the permissive one.
	// So does a whole v2 definition in the v2 document.
	b.SetCustomResourceSchemas(map[schema.GroupVersionKind]*spec.Schema{widgetGVK: {SchemaProps: spec.SchemaProps{
		Type:       []string{"object"},
		Properties: map[string]spec.Schema{"spec": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, Description: "the widget"}}},
	}}}, map[schema.GroupVersionKind]*spec.Schema{widgetGVK: {SchemaProps: spec.SchemaProps{
		Type: []string{"object"},
		Properties: map[string]spec.Schema{
			"spec":     {SchemaProps: spec.SchemaProps{Type: []string{"object"}, Description: "the widget, v2"}},
			"metadata": {SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef("#/definitions/elsewhere"), Description: "its metadata"}},
		},
	}}})
	doc = fetchV3(t, b, "apis/example.com/v1")
	w = doc.Components.Schemas["com.example.v1.Widget"]
	if w.Properties["spec"].Description != "the widget" || w.Properties["metadata"].AllOf == nil {
		t.Errorf("Widget with a given schema = %+v", w)
	}
	v2 := &spec.Swagger{}
	if err := json.Unmarshal(get(t, b, "/openapi/v2", nil).Body.Bytes(), v2); err != nil {
		t.Fatal(err)
	}
	w2 := v2.Definitions["com.example.v1.Widget"]
	metaRef := w2.Properties["metadata"].Ref
	if w2.Properties["spec"].Description != "the widget, v2" || metaRef.String() != "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" {
		t.Errorf("v2 Widget with a given definition = %+v", w2)
	}
	raw, _ = json.Marshal(v2)
	checkRefs(t, raw, "#/definitions/", v2.Definitions)
	// v2 still parses with a custom kind in it.
	rec := get(t, b, "/openapi/v2", map[string]string{"Accept": mtV2Protobuf})
	d := &openapi_v2.Document{}
	if err := proto.Unmarshal(rec.Body.Bytes(), d); err != nil {
		t.Fatal(err)
	}
	if _, err := protomodels.NewOpenAPIData(d); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentRequests(t *testing.T) {
	b := New(testResources(), scheme.Scheme)
	srv := httptest.NewServer(b)
	defer srv.Close()
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		go func(i int) {
			if i%4 == 0 {
				b.SetResources(testResources())
			}
			resp, err := http.Get(srv.URL + "/openapi/v3/api/v1")
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = io.ErrUnexpectedEOF
				}
			}
			errs <- err
		}(i)
	}
	for i := 0; i < 16; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func BenchmarkBuildV3(b *testing.B) {
	resources := allBuiltinResources()
	smdHints() // loaded once per process
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := New(resources, scheme.Scheme).V3Schemas(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildV2(b *testing.B) {
	resources := allBuiltinResources()
	smdHints()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := New(resources, scheme.Scheme).V2Document(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGnosticFastPath checks that building gnostic documents from our own
// JSON-to-node conversion gives what gnostic's YAML-based parsers give.
func TestGnosticFastPath(t *testing.T) {
	b := New(testResources(), scheme.Scheme)
	v2, err := b.V2Document()
	if err != nil {
		t.Fatal(err)
	}
	want2, err := openapi_v2.ParseDocument(v2)
	if err != nil {
		t.Fatal(err)
	}
	got2Bytes, err := v2Protobuf(v2)
	if err != nil {
		t.Fatal(err)
	}
	got2 := &openapi_v2.Document{}
	if err := proto.Unmarshal(got2Bytes, got2); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(want2, got2) {
		t.Error("v2: fast path differs from openapi_v2.ParseDocument")
	}
	v3, _, err := b.V3Document(podGVK.GroupVersion())
	if err != nil {
		t.Fatal(err)
	}
	want3, err := openapi_v3.ParseDocument(v3)
	if err != nil {
		t.Fatal(err)
	}
	got3Bytes, err := v3Protobuf(v3)
	if err != nil {
		t.Fatal(err)
	}
	got3 := &openapi_v3.Document{}
	if err := proto.Unmarshal(got3Bytes, got3); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(want3, got3) {
		t.Error("v3: fast path differs from openapi_v3.ParseDocument")
	}
}
