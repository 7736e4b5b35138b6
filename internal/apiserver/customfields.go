package apiserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// objectMetaDefinition is the OpenAPI name of ObjectMeta.
const objectMetaDefinition = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

var refPattern = regexp.MustCompile(`"\$ref":"#/(?:components/schemas|definitions)/([^"]+)"`)

// objectMetaSchemas returns the OpenAPI definitions of ObjectMeta and
// everything it refers to, read from the OpenAPI builder the first time
// they are needed; nil without one.
func (s *Server) objectMetaSchemas() map[string]*spec.Schema {
	s.crMeta.mu.Lock()
	defer s.crMeta.mu.Unlock()
	if s.crMeta.schemas != nil {
		return s.crMeta.schemas
	}
	func() {
		pub, ok := s.cfg.OpenAPI.(openAPIPublisher)
		if !ok {
			return
		}
		all, err := pub.V3Schemas()
		if err != nil {
			// Tried again on the next custom resource's first write.
			s.log.Warn("custom resources: no OpenAPI schemas for server-side apply", "err", err)
			return
		}
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
		if _, ok := out[objectMetaDefinition]; ok {
			s.crMeta.schemas = out
		}
	}()
	return s.crMeta.schemas
}

// customTypeConverter builds the structured-merge-diff types of every
// version of def from their schemas, as upstream does; a resource without
// schemas (or that preserves unknown fields) gets the deduced converter,
// which treats every field as atomic.
func (s *Server) customTypeConverter(def *CustomResource) managedfields.TypeConverter {
	meta := s.objectMetaSchemas()
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
		sch := *copySchema(v.Schema)
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
		s.log.Warn("custom resource schema unusable for server-side apply; fields are atomic", "group", def.Group, "plural", def.Plural, "err", err)
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

func copySchema(s *spec.Schema) *spec.Schema {
	data, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	out := &spec.Schema{}
	if err := json.Unmarshal(data, out); err != nil {
		panic(err)
	}
	return out
}

// customFieldManagers builds the field managers of a custom resource
// version: the main resource (which never owns status when status is a
// subresource) and /status (which owns neither metadata nor spec).
func (rs *resourceStore) customFieldManagers() (map[string]*managedfields.FieldManager, error) {
	out := map[string]*managedfields.FieldManager{}
	gv := rs.res.Kind.GroupVersion()
	tc := rs.cr.typeConverter()
	conv := customConvertor{rs.cr}
	for _, sub := range []string{"", "status"} {
		if sub == "status" && !rs.hasStatus {
			continue
		}
		reset := map[fieldpath.APIVersion]fieldpath.Filter{}
		if rs.hasStatus {
			paths := fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
			if sub == "status" {
				paths = fieldpath.NewSet(fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec"))
			}
			for _, v := range rs.cr.def.Versions {
				reset[fieldpath.APIVersion(rs.cr.def.Group+"/"+v.Resource.Kind.Version)] = fieldpath.NewExcludeSetFilter(paths)
			}
		}
		m, err := managedfields.NewDefaultCRDFieldManager(tc, conv, strategyDefaulter{rs}, customCreater{}, rs.res.Kind, gv, sub, reset)
		if err != nil {
			return nil, fmt.Errorf("field manager for %s: %w", rs.gr, err)
		}
		out[sub] = m
	}
	return out, nil
}

// customConvertor converts custom objects between the versions of their
// resource, for the field manager (managed fields recorded in another
// version).
type customConvertor struct{ cr *customInfo }

func (c customConvertor) Convert(in, out, _ interface{}) error {
	u, ok1 := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	o.Object = runtime.DeepCopyJSON(u.Object)
	return nil
}

func (c customConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T", in)
	}
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("%s is not convertible to %v", u.GroupVersionKind(), target)
	}
	out, err := c.cr.convert([]*unstructured.Unstructured{u.DeepCopy()}, gvk.Version)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func (c customConvertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// customCreater makes empty unstructured objects of any kind.
type customCreater struct{}

func (customCreater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetGroupVersionKind(kind)
	return u, nil
}
