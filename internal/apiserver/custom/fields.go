package custom

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"plainkube.dev/plainkube/internal/openapi"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// objectMetaDefinition is the OpenAPI name of ObjectMeta.
const objectMetaDefinition = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

var refPattern = regexp.MustCompile(`"\$ref":"#/(?:components/schemas|definitions)/([^"]+)"`)

// ObjectMetaSchemas picks from all (an OpenAPI v3 document's schemas) the
// definition of ObjectMeta and everything it refers to; nil if ObjectMeta
// is not among them.
func ObjectMetaSchemas(all map[string]*spec.Schema) map[string]*spec.Schema {
	out := map[string]*spec.Schema{}
	queue := []string{objectMetaDefinition}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if _, done := out[name]; done {
			continue
		}
		d, ok := all[name]
		if !ok {
			continue
		}
		out[name] = d
		data, err := json.Marshal(d)
		if err != nil {
			continue
		}
		for _, m := range refPattern.FindAllStringSubmatch(string(data), -1) {
			queue = append(queue, m[1])
		}
	}
	if _, ok := out[objectMetaDefinition]; !ok {
		return nil
	}
	return out
}

// TypeConverter builds the structured-merge-diff types of every version
// of def from their schemas and meta (ObjectMetaSchemas), as upstream
// does; a resource without schemas (or that preserves unknown fields, or
// without meta) gets the deduced converter, which treats every field as
// atomic.
func TypeConverter(def *Resource, meta map[string]*spec.Schema, log *slog.Logger) managedfields.TypeConverter {
	if meta == nil || def.PreserveUnknownFields {
		return managedfields.NewDeducedTypeConverter()
	}
	models := maps.Clone(meta)
	metaRef := spec.MustCreateRef("#/components/schemas/" + objectMetaDefinition)
	str := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
	for _, v := range def.Versions {
		if v.Schema == nil {
			return managedfields.NewDeducedTypeConverter()
		}
		gvk := v.Resource.Kind
		sch := *openapi.DeepCopySchema(v.Schema)
		props := maps.Clone(sch.Properties)
		if props == nil {
			props = map[string]spec.Schema{}
		}
		props["apiVersion"], props["kind"] = str, str
		props["metadata"] = spec.Schema{SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{{SchemaProps: spec.SchemaProps{Ref: metaRef}}}}}
		sch.Properties = props
		sch.Extensions = maps.Clone(sch.Extensions)
		if sch.Extensions == nil {
			sch.Extensions = spec.Extensions{}
		}
		sch.Extensions["x-kubernetes-group-version-kind"] = []interface{}{
			map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind},
		}
		models[customModelName(gvk)] = &sch
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		log.Warn("custom resource schema unusable for server-side apply; fields are atomic", "group", def.Group, "plural", def.Plural, "err", err)
		return managedfields.NewDeducedTypeConverter()
	}
	return tc
}

// customModelName names a custom kind's definition as upstream does
// (com.example.v1.Widget for example.com/v1 Widget).
func customModelName(gvk schema.GroupVersionKind) string {
	parts := strings.Split(gvk.Group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + "." + gvk.Version + "." + gvk.Kind
}

// FieldManagers builds the field managers of the served version: the
// main resource (which never owns status when status is a subresource)
// and /status (which owns neither metadata nor spec). defaulter applies
// the version's defaults to applied objects.
func (s *Served) FieldManagers(hasStatus bool, defaulter runtime.ObjectDefaulter) (map[string]*managedfields.FieldManager, error) {
	out := map[string]*managedfields.FieldManager{}
	kind := s.Ver.Resource.Kind
	gv := kind.GroupVersion()
	tc := s.TypeConverter()
	conv := convertor{s}
	for _, sub := range []string{"", "status"} {
		if sub == "status" && !hasStatus {
			continue
		}
		reset := map[fieldpath.APIVersion]fieldpath.Filter{}
		if hasStatus {
			paths := fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
			if sub == "status" {
				paths = fieldpath.NewSet(fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec"))
			}
			for _, v := range s.Def.Versions {
				reset[fieldpath.APIVersion(s.Def.Group+"/"+v.Resource.Kind.Version)] = fieldpath.NewExcludeSetFilter(paths)
			}
		}
		m, err := managedfields.NewDefaultCRDFieldManager(tc, conv, defaulter, creater{}, kind, gv, sub, reset)
		if err != nil {
			return nil, fmt.Errorf("field manager for %s: %w", s.groupResource(), err)
		}
		out[sub] = m
	}
	return out, nil
}

// convertor converts custom objects between the versions of their
// resource, for the field manager (managed fields recorded in another
// version).
type convertor struct{ s *Served }

func (c convertor) Convert(in, out, _ interface{}) error {
	u, ok1 := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	o.Object = runtime.DeepCopyJSON(u.Object)
	return nil
}

func (c convertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T", in)
	}
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("%s is not convertible to %v", u.GroupVersionKind(), target)
	}
	out, err := c.s.Convert([]*unstructured.Unstructured{u.DeepCopy()}, gvk.Version)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func (c convertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// creater makes empty unstructured objects of any kind.
type creater struct{}

func (creater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetGroupVersionKind(kind)
	return u, nil
}
