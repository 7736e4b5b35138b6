package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// raw sends one request with the admin's credentials.
func raw(t *testing.T, cfg *rest.Config, method, path, contentType, accept, body string) (int, http.Header, string) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(cfg.Host, "/")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

func loadCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func widget(name, spec string) string {
	return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
}

func TestCustomResourceSchemas(t *testing.T) {
	_, cfg := startServer(t)
	createCRD(t, cfg, loadCRD(t, "testdata/widgets-crd.yaml"))
	const base = "/apis/example.com/v1/namespaces/default/widgets"
	post := func(query, body string) (int, http.Header, string) {
		return raw(t, cfg, "POST", base+query, "application/json", "", body)
	}
	cases := []struct {
		name, query, body string
		code              int
		want              []string // substrings of the response
		warning           string
	}{
		{"defaults", "", widget("d", `{}`), 201, []string{`"replicas":1`, `"color":"red"`, `"maxReplicas":10`}, ""},
		{"unknown fields pruned (Ignore)", "?fieldValidation=Ignore", widget("p", `{"bogus":1,"extra":{"kept":true}}`), 201, []string{`"extra":{"kept":true}`}, ""},
		{"unknown fields warned", "", widget("w", `{"bogus":1}`), 201, nil, `unknown field \"spec.bogus\"`},
		{"unknown fields refused (Strict)", "?fieldValidation=Strict", widget("s", `{"bogus":1}`), 400, []string{`strict decoding error: unknown field \"spec.bogus\"`}, ""},
		{"int-or-string int", "", widget("i1", `{"port":80}`), 201, []string{`"port":80`}, ""},
		{"int-or-string string", "", widget("i2", `{"port":"http"}`), 201, []string{`"port":"http"`}, ""},
		{"int-or-string bool", "", widget("i3", `{"port":true}`), 422, []string{`spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"`}, ""},
		{"enum", "", widget("e", `{"color":"pink"}`), 422, []string{`spec.color: Unsupported value: \"pink\": supported values: \"red\", \"green\", \"blue\"`}, ""},
		{"minimum", "", widget("m", `{"replicas":-1}`), 422, []string{`spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`}, ""},
		{"list set duplicates", "", widget("ls", `{"tags":["a","a"]}`), 422, []string{`spec.tags[1]: Duplicate value: \"a\"`}, ""},
		{"list map duplicates", "", widget("lm", `{"ports":[{"name":"a","port":1},{"name":"a","port":2}]}`), 422, []string{`spec.ports[1]: Duplicate value: {\"name\":\"a\"}`}, ""},
		{"CEL rule", "", widget("c", `{"replicas":20}`), 422, []string{`spec: Invalid value: replicas must not exceed maxReplicas`}, ""},
		{"embedded resource needs apiVersion and kind", "", widget("er", `{"template":{"metadata":{"name":"x"}}}`), 422, []string{`spec.template.apiVersion: Required value`, `spec.template.kind: Required value`}, ""},
		{"embedded resource", "", widget("er2", `{"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","bogus":1},"spec":{}}}`), 201, []string{`"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{}}`}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, h, body := post(c.query, c.body)
			if code != c.code {
				t.Fatalf("code %d, want %d: %s", code, c.code, body)
			}
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %s:\n%s", w, body)
				}
			}
			if c.warning != "" && !strings.Contains(strings.Join(h.Values("Warning"), "\n"), c.warning) {
				t.Errorf("warnings %q lack %s", h.Values("Warning"), c.warning)
			}
		})
	}

	// Transition rule: color is immutable.
	code, _, body := raw(t, cfg, "PATCH", base+"/d", "application/merge-patch+json", "", `{"spec":{"color":"blue"}}`)
	if code != 422 || !strings.Contains(body, "color is immutable") {
		t.Errorf("transition rule: %d %s", code, body)
	}
	code, _, body = raw(t, cfg, "PATCH", base+"/d", "application/merge-patch+json", "", `{"spec":{"replicas":2}}`)
	if code != 200 || !strings.Contains(body, `"generation":2`) {
		t.Errorf("allowed patch: %d %s", code, body)
	}

	// Server-side apply merges by the schema: two managers own one entry
	// each of a list-map, and a third conflicts on a field it does not own.
	apply := func(manager, spec string, force bool) (int, string) {
		q := "?fieldManager=" + manager
		if force {
			q += "&force=true"
		}
		code, _, body := raw(t, cfg, "PATCH", base+"/ssa"+q, "application/apply-patch+yaml", "",
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"ssa"},"spec":`+spec+`}`)
		return code, body
	}
	if code, body := apply("a", `{"ports":[{"name":"a","port":1}]}`, false); code != 201 {
		t.Fatalf("apply a: %d %s", code, body)
	}
	if code, body := apply("b", `{"ports":[{"name":"b","port":2}],"tags":["x"]}`, false); code != 200 || !strings.Contains(body, `"ports":[{"name":"a","port":1},{"name":"b","port":2}]`) {
		t.Fatalf("apply b: %d %s", code, body)
	}
	if code, body := apply("c", `{"ports":[{"name":"a","port":3}]}`, false); code != 409 || !strings.Contains(body, `.spec.ports[name=\"a\"].port`) {
		t.Errorf("conflicting apply: %d %s", code, body)
	}

	// Integers stay integers on every write path, so that CEL rules over
	// integer fields see int64 (a float64 fails them with "accessor
	// error"), as upstream's unstructured decoding keeps them.
	if code, body := apply("a", `{"ports":[{"name":"a","port":1}],"replicas":2,"maxReplicas":5}`, false); code != 200 || !strings.Contains(body, `"replicas":2`) {
		t.Errorf("apply of integer fields checked by a CEL rule: %d %s", code, body)
	}
	yamlApply := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ssa\nspec:\n  replicas: 3\n  maxReplicas: 4\n"
	if code, _, body := raw(t, cfg, "PATCH", base+"/ssa?fieldManager=d&force=true", "application/apply-patch+yaml", "", yamlApply); code != 200 || !strings.Contains(body, `"replicas":3`) {
		t.Errorf("YAML apply of integer fields checked by a CEL rule: %d %s", code, body)
	}
	if code, _, body := raw(t, cfg, "PATCH", base+"/ssa", "application/json-patch+json", "", `[{"op":"replace","path":"/spec/replicas","value":4}]`); code != 200 || !strings.Contains(body, `"replicas":4`) {
		t.Errorf("JSON patch of an integer field checked by a CEL rule: %d %s", code, body)
	}
	code, _, body = raw(t, cfg, "GET", base+"/ssa", "", "", "")
	if code != 200 {
		t.Fatalf("get: %d %s", code, body)
	}
	if code, _, body := raw(t, cfg, "PUT", base+"/ssa", "application/json", "", strings.Replace(body, `"replicas":4`, `"replicas":1`, 1)); code != 200 || !strings.Contains(body, `"replicas":1`) {
		t.Errorf("update of an integer field checked by a CEL rule: %d %s", code, body)
	}
}

func TestCustomResourceSubresourcesAndPrinting(t *testing.T) {
	_, cfg := startServer(t)
	createCRD(t, cfg, loadCRD(t, "testdata/widgets-crd.yaml"))
	ctx := context.Background()
	const base = "/apis/example.com/v1/namespaces/default/widgets"
	for _, w := range []string{widget("a", `{"replicas":2,"color":"green"}`), widget("b", `{}`)} {
		if code, _, body := raw(t, cfg, "POST", base, "application/json", "", w); code != 201 {
			t.Fatalf("create: %d %s", code, body)
		}
	}

	// Table: NAME, the printer columns, with priorities.
	code, _, body := raw(t, cfg, "GET", base, "", "application/json;as=Table;v=v1;g=meta.k8s.io", "")
	if code != 200 {
		t.Fatalf("table: %d %s", code, body)
	}
	var table metav1.Table
	if err := json.Unmarshal([]byte(body), &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Name,Replicas,Color,Age" || table.ColumnDefinitions[2].Priority != 1 {
		t.Errorf("columns %v", table.ColumnDefinitions)
	}
	if len(table.Rows) != 2 || table.Rows[0].Cells[0] != "a" || table.Rows[0].Cells[1] != float64(2) || table.Rows[0].Cells[2] != "green" {
		t.Errorf("rows %+v", table.Rows)
	}

	// Scale subresource.
	code, _, body = raw(t, cfg, "GET", base+"/a/scale", "", "", "")
	if code != 200 || !strings.Contains(body, `"kind":"Scale"`) || !strings.Contains(body, `"replicas":2`) {
		t.Fatalf("get scale: %d %s", code, body)
	}
	code, _, body = raw(t, cfg, "PATCH", base+"/a/scale", "application/merge-patch+json", "", `{"spec":{"replicas":5}}`)
	if code != 200 || !strings.Contains(body, `"spec":{"replicas":5}`) {
		t.Fatalf("patch scale: %d %s", code, body)
	}
	dyn := dynamicClient(t, cfg).Resource(widgetsGVR).Namespace("default")
	a, err := dyn.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(a.Object, "spec", "replicas"); r != 5 || a.GetGeneration() != 2 {
		t.Errorf("after scale: replicas %d generation %d", r, a.GetGeneration())
	}
	// Status subresource feeds the scale's status.
	code, _, body = raw(t, cfg, "PATCH", base+"/a/status", "application/merge-patch+json", "", `{"status":{"replicas":4,"selector":"app=a"},"spec":{"replicas":9}}`)
	if code != 200 || !strings.Contains(body, `"replicas":5`) {
		t.Fatalf("status patch: %d %s", code, body)
	}
	code, _, body = raw(t, cfg, "GET", base+"/a/scale", "", "", "")
	if !strings.Contains(body, `"status":{"replicas":4,"selector":"app=a"}`) {
		t.Errorf("scale status: %d %s", code, body)
	}
	// Scaling below zero is refused.
	code, _, _ = raw(t, cfg, "PATCH", base+"/a/scale", "application/merge-patch+json", "", `{"spec":{"replicas":-1}}`)
	if code != 422 {
		t.Errorf("negative scale: %d", code)
	}

	// Selectable fields.
	list, err := dyn.List(ctx, metav1.ListOptions{FieldSelector: "spec.color=green"})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "a" {
		t.Fatalf("field selector: %v %v", err, list)
	}
	if _, err := dyn.List(ctx, metav1.ListOptions{FieldSelector: "spec.replicas=1"}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "field label not supported: spec.replicas") {
		t.Errorf("unsupported field selector: %v", err)
	}

	// The deprecated version: same objects, relabelled, with a warning.
	code, h, body := raw(t, cfg, "GET", "/apis/example.com/v1beta1/namespaces/default/widgets/a", "", "", "")
	if code != 200 || !strings.Contains(body, `"apiVersion":"example.com/v1beta1"`) {
		t.Errorf("v1beta1 get: %d %s", code, body)
	}
	if w := h.Get("Warning"); !strings.Contains(w, "example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget") {
		t.Errorf("warning %q", w)
	}

	// Discovery: preferred version first, names and subresources.
	code, _, body = raw(t, cfg, "GET", "/apis", "", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "")
	i := strings.Index(body, `"name":"example.com"`)
	if code != 200 || i < 0 {
		t.Fatalf("aggregated discovery lacks example.com: %s", body)
	}
	group := body[i:]
	if !strings.HasPrefix(group[strings.Index(group, `"versions"`):], `"versions":[{"version":"v1"`) ||
		!strings.Contains(group, `"shortNames":["wd"]`) || !strings.Contains(group, `"categories":["all"]`) ||
		!strings.Contains(group, `"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"}`) {
		t.Errorf("discovery of example.com: %s", group[:min(len(group), 2000)])
	}

	// OpenAPI v3 publishes the schema, with its defaults, and no strategic merge patch.
	code, _, body = raw(t, cfg, "GET", "/openapi/v3/apis/example.com/v1", "", "application/json", "")
	if code != 200 || !strings.Contains(body, `"com.example.v1.Widget"`) || !strings.Contains(body, `"default":"red"`) {
		t.Errorf("openapi v3: %d %.500s", code, body)
	}
	if strings.Contains(body, "strategic-merge-patch") {
		t.Errorf("openapi v3 offers strategic merge patch for a custom resource")
	}
}

func TestCustomResourceDefinitionValidationAndNaming(t *testing.T) {
	_, cfg := startServer(t)
	ctx := context.Background()
	cs := crdClient(t, cfg).ApiextensionsV1().CustomResourceDefinitions()

	// Not structural: a property without a type.
	bad := loadCRD(t, "testdata/widgets-crd.yaml")
	bad.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": {Type: "string"}}}
	_, err := cs.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields") {
		t.Errorf("non-structural schema: %v", err)
	}
	// The name must be <plural>.<group>.
	bad = loadCRD(t, "testdata/widgets-crd.yaml")
	bad.Name = "widget.example.com"
	_, err = cs.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `metadata.name: Invalid value: "widget.example.com": must be spec.names.plural+"."+spec.group`) {
		t.Errorf("bad name: %v", err)
	}

	createCRD(t, cfg, loadCRD(t, "testdata/widgets-crd.yaml"))
	// A second CRD of the group claiming the same kind and short name.
	dup := loadCRD(t, "testdata/widgets-crd.yaml")
	dup.Name = "gadgets.example.com"
	dup.Spec.Names.Plural, dup.Spec.Names.Singular = "gadgets", "gadget"
	if _, err := cs.Create(ctx, dup, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *apiextensionsv1.CustomResourceDefinition
	for i := 0; i < 100; i++ {
		got, err = cs.Get(ctx, dup.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Conditions) > 0 {
			break
		}
		sleep()
	}
	var names, established *apiextensionsv1.CustomResourceDefinitionCondition
	for i := range got.Status.Conditions {
		switch got.Status.Conditions[i].Type {
		case apiextensionsv1.NamesAccepted:
			names = &got.Status.Conditions[i]
		case apiextensionsv1.Established:
			established = &got.Status.Conditions[i]
		}
	}
	if names == nil || names.Status != apiextensionsv1.ConditionFalse || names.Reason != "ListKindConflict" && names.Reason != "KindConflict" && names.Reason != "ShortNamesConflict" {
		t.Errorf("NamesAccepted %+v", names)
	}
	if established == nil || established.Reason != "NotAccepted" {
		t.Errorf("Established %+v", established)
	}
	if code, _, _ := raw(t, cfg, "GET", "/apis/example.com/v1/gadgets", "", "", ""); code != 404 {
		t.Errorf("gadgets served without accepted names: %d", code)
	}
}

func TestClusterScopedCustomResourceAndTermination(t *testing.T) {
	_, cfg := startServer(t)
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "clusterthings.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "clusterthings", Kind: "ClusterThing"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTrue()}}}},
		},
	}
	createCRD(t, cfg, crd)
	const base = "/apis/example.com/v1/clusterthings"
	thing := func(name string, finalizers ...string) string {
		f, _ := json.Marshal(finalizers)
		return `{"apiVersion":"example.com/v1","kind":"ClusterThing","metadata":{"name":"` + name + `","finalizers":` + string(f) + `},"anything":{"goes":1}}`
	}
	if code, _, body := raw(t, cfg, "POST", base, "application/json", "", thing("a", "example.com/hold")); code != 201 || !strings.Contains(body, `"anything":{"goes":1}`) {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, _, _ := raw(t, cfg, "GET", "/apis/example.com/v1/namespaces/default/clusterthings", "", "", ""); code != 404 {
		t.Errorf("cluster-scoped resource under a namespace: %d", code)
	}
	// The CRD waits for its instance's finalizer; meanwhile creates are refused.
	cs := crdClient(t, cfg).ApiextensionsV1().CustomResourceDefinitions()
	if err := cs.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *apiextensionsv1.CustomResourceDefinition
	for i := 0; i < 200; i++ {
		got, _ = cs.Get(ctx, crd.Name, metav1.GetOptions{})
		if c := findCondition(got, apiextensionsv1.Terminating); c != nil && c.Reason == "InstanceDeletionInProgress" {
			break
		}
		sleep()
	}
	if c := findCondition(got, apiextensionsv1.Terminating); c == nil || c.Status != apiextensionsv1.ConditionTrue || c.Reason != "InstanceDeletionInProgress" {
		t.Fatalf("Terminating %+v", c)
	}
	// The served definition follows the CRD through the crd-serving
	// controller, so the refusal may come a moment after the condition.
	var code int
	var body string
	for i := 0; i < 100; i++ {
		if code, _, body = raw(t, cfg, "POST", base, "application/json", "", thing(fmt.Sprintf("b%d", i))); code == 403 {
			break
		}
		sleep()
	}
	if code != 403 || !strings.Contains(body, "create not allowed while custom resource definition is terminating") {
		t.Errorf("create while terminating: %d %s", code, body)
	}
	if code, _, body := raw(t, cfg, "PATCH", base+"/a", "application/merge-patch+json", "", `{"metadata":{"finalizers":null}}`); code != 200 {
		t.Fatalf("removing the finalizer: %d %s", code, body)
	}
	for i := 0; i < 250; i++ {
		if _, err := cs.Get(ctx, crd.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		sleep()
	}
	if _, err := cs.Get(ctx, crd.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("CRD still there: %v", err)
	}
	for i := 0; i < 100; i++ {
		if code, _, _ := raw(t, cfg, "GET", base, "", "", ""); code == 404 {
			return
		}
		sleep()
	}
	t.Errorf("route still served")
}

func findCondition(crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	if crd == nil {
		return nil
	}
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == typ {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

func ptrTrue() *bool { b := true; return &b }
