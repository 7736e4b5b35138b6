package customresource

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"plainkube.dev/plainkube/internal/apiserver/custom"
	"sigs.k8s.io/yaml"
)

const crdYAML = `
metadata: {name: things.example.com, uid: u1}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: things, singular: thing, kind: Thing, listKind: ThingList}
  versions:
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Mode, type: string, jsonPath: .spec.mode, priority: 1}
    selectableFields: [{jsonPath: .spec.mode}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 3}
              mode: {type: string}
              free: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, properties: {ok: {type: boolean}}}
status:
  acceptedNames: {plural: things, singular: thing, kind: Thing, listKind: ThingList}
  conditions: [{type: Established, status: "True"}]
`

func build(t *testing.T) *custom.Resource {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(crdYAML), crd); err != nil {
		t.Fatal(err)
	}
	cr, err := New(crd, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cr
}

func TestNew(t *testing.T) {
	cr := build(t)
	if cr.StorageVersion != "v1" || !cr.Established || cr.Terminating || cr.Convert != nil || len(cr.Versions) != 2 {
		t.Fatalf("resource %+v", cr)
	}
	beta, v1 := cr.Versions[0], cr.Versions[1]
	if beta.Warning != "example.com/v1beta1 Thing is deprecated; use example.com/v1 Thing" || v1.Warning != "" {
		t.Errorf("warnings %q %q", beta.Warning, v1.Warning)
	}
	if strings.Join(v1.Resource.Subresources, ",") != "status" || len(beta.Resource.Subresources) != 0 || v1.ListKind != "ThingList" {
		t.Errorf("v1 %+v", v1.Resource)
	}
	if v1.Schema == nil || v1.Schema.Properties["spec"].Properties["size"].Default == nil {
		t.Errorf("published schema %+v", v1.Schema)
	}

	// Pruning reports unknown fields, keeps preserved ones; defaulting fills size.
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Thing",
		"metadata": map[string]interface{}{"name": "a", "bogus": int64(1)},
		"spec":     map[string]interface{}{"mode": "fast", "extra": int64(1), "free": map[string]interface{}{"x": int64(1)}},
	}}
	unknown, err := v1.Coerce(u, custom.CoerceOptions{ReportUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(unknown, ",") != "metadata.bogus,spec.extra" {
		t.Errorf("unknown fields %v", unknown)
	}
	v1.Resource.Strategy.Default(u)
	if size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size"); size != 3 {
		t.Errorf("defaulted size %d", size)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "free", "x"); !ok {
		t.Errorf("preserved field pruned: %v", u.Object)
	}
	if errs := v1.Resource.Strategy.Validate(u); len(errs) != 0 {
		t.Errorf("valid object: %v", errs)
	}
	u.SetCreationTimestamp(metav1.Now())
	cells := v1.Resource.Strategy.Table.Cells(u)
	if len(cells) != 3 || cells[0] != "a" || cells[1] != int64(3) || cells[2] != "fast" {
		t.Errorf("cells %v", cells)
	}
	if fs := v1.Resource.Strategy.SelectableFields(u); fs["spec.mode"] != "fast" {
		t.Errorf("selectable fields %v", fs)
	}

	bad := u.DeepCopy()
	unstructured.SetNestedField(bad.Object, "big", "spec", "size")
	errs := v1.Resource.Strategy.Validate(bad)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`) {
		t.Errorf("invalid size: %v", errs)
	}
	// The default columns of a version without printer columns: Name, Age.
	var names []string
	for _, c := range beta.Resource.Strategy.Table.Columns {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "Name,Age" {
		t.Errorf("default columns %v", names)
	}
}

func TestRestoreObjectMeta(t *testing.T) {
	orig := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{
		"name": "a", "uid": "1", "labels": map[string]interface{}{"a": "1"}, "resourceVersion": "7"}}}
	conv := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{
		"name": "a", "uid": "1", "labels": map[string]interface{}{"b": "2"}, "resourceVersion": "99", "generation": int64(5)}}}
	if err := restoreObjectMeta(orig, conv); err != nil {
		t.Fatal(err)
	}
	if conv.GetResourceVersion() != "7" || conv.GetGeneration() != 0 || conv.GetLabels()["b"] != "2" || conv.GetLabels()["a"] != "" {
		t.Errorf("restored %v", conv.Object)
	}
	conv.SetName("other")
	if err := restoreObjectMeta(orig, conv); err == nil || !strings.Contains(err.Error(), "must have the same name") {
		t.Errorf("renamed: %v", err)
	}
}
