package apiserver

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	_ "unsafe" // go:linkname clientGoSchema

	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggapplyconfiguration "k8s.io/kube-aggregator/pkg/client/applyconfiguration"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	aeapplyconfiguration "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	_ "k8s.io/client-go/applyconfigurations" // links clientGoSchema's package
	"plainkube.dev/plainkube/internal/registry"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	yaml "go.yaml.in/yaml/v2"
)

// typeConverter knows the structure (list and map types, merge keys) of
// every built-in type; building it parses a large schema, so it is made once.
var typeConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return groupTypeConverter{
		builtin: builtinTypeConverter(),
		byGroup: map[string]managedfields.TypeConverter{
			apiextensionsv1.GroupName:   aeapplyconfiguration.NewTypeConverter(scheme),
			apiregistrationv1.GroupName: aggapplyconfiguration.NewTypeConverter(scheme),
		},
	}
})

// clientGoSchema is client-go's schema of the built-in types (YAML), which
// applyconfigurations.NewTypeConverter parses twice: once to check it
// against structured-merge-diff's schema of schemas, once to decode it.
// builtinTypeConverter decodes it once, halving what is the dearest step
// of a server's start. (A client-go that renamed the variable fails to
// link, never silently.)
//
//go:linkname clientGoSchema k8s.io/client-go/applyconfigurations/internal.schemaYAML
var clientGoSchema typed.YAMLObject

// builtinTypeConverter is applyconfigurations.NewTypeConverter(scheme)
// without the schema check, and without validating Go-typed objects
// against the schema (see structConverter).
func builtinTypeConverter() managedfields.TypeConverter {
	p := &typed.Parser{}
	if err := yaml.Unmarshal([]byte(clientGoSchema), &p.Schema); err != nil {
		panic(fmt.Sprintf("client-go's schema of the built-in types: %v", err))
	}
	return structConverter{TypeConverter: managedfields.NewSchemeTypeConverter(scheme, p), parser: p}
}

// structConverter makes typed values of Go-typed objects without walking
// them to validate them against the schema, which was half of what
// tracking managedFields cost: the schema is generated from those very
// types, so the walk finds nothing the merge's own walk would not (an
// object it cannot merge fails there, and its managedFields are reset as
// after a failed validation). Unstructured objects (applied
// configurations, which a client wrote) are validated.
type structConverter struct {
	managedfields.TypeConverter
	parser *typed.Parser
}

func (c structConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return c.TypeConverter.ObjectToTyped(obj, opts...)
	}
	name, err := scheme.ToOpenAPIDefinitionName(obj.GetObjectKind().GroupVersionKind())
	if err != nil {
		return nil, err
	}
	t := c.parser.Type(name)
	if !t.IsValid() {
		return nil, fmt.Errorf("no schema for type %s", name)
	}
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return nil, err
	}
	return typed.AsTypedUnvalidated(v, t.Schema, t.TypeRef), nil
}

// WarmTypeConverter builds typeConverter in the background. Parsing
// client-go's schema of the built-in types takes about a tenth of a
// second, which a starting server would otherwise spend at its first write
// rather than beside its other start-up work.
func WarmTypeConverter() { go typeConverter() }

// TypeConverter is the schemas of every type the server serves but custom
// resources (those of the built-in kinds, CRDs and APIServices).
func TypeConverter() managedfields.TypeConverter { return typeConverter() }

// groupTypeConverter sends each object to the converter of its group:
// client-go's schema knows every built-in type but CRDs and APIServices,
// whose schemas come with apiextensions-apiserver's and kube-aggregator's
// apply configurations.
type groupTypeConverter struct {
	builtin managedfields.TypeConverter
	byGroup map[string]managedfields.TypeConverter
}

func (c groupTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if tc, ok := c.byGroup[obj.GetObjectKind().GroupVersionKind().Group]; ok {
		return tc.ObjectToTyped(obj, opts...)
	}
	return c.builtin.ObjectToTyped(obj, opts...)
}

func (c groupTypeConverter) TypedToObject(value *typed.TypedValue) (runtime.Object, error) {
	return c.builtin.TypedToObject(value)
}

// fieldManagers tracks managedFields for one resource: one manager for the
// main resource and one per writable subresource.
type fieldManagers struct {
	once   sync.Once
	err    error
	byName map[string]*managedfields.FieldManager
}

// strategyDefaulter lets the field manager default an applied object with
// the resource's own defaults.
type strategyDefaulter struct{ rs *resourceStore }

func (d strategyDefaulter) Default(obj runtime.Object) {
	if d.rs.res.Strategy.Default != nil {
		d.rs.res.Strategy.Default(obj)
	}
}

// fieldManager returns the manager for subresource ("" for the main resource).
func (rs *resourceStore) fieldManager(subresource string) (*managedfields.FieldManager, error) {
	fm := &rs.managers
	fm.once.Do(func() {
		if rs.cr != nil {
			fm.byName, fm.err = rs.cr.FieldManagers(rs.hasStatus, strategyDefaulter{rs})
			return
		}
		fm.byName = map[string]*managedfields.FieldManager{}
		gv := rs.res.Kind.GroupVersion()
		for _, sub := range []string{"", "status"} {
			if sub == "status" && !rs.hasStatus {
				continue
			}
			// The main resource never owns status, and /status never owns spec.
			reset := fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
			if sub == "status" {
				reset = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
			}
			resetFields := map[fieldpath.APIVersion]fieldpath.Filter{}
			if rs.hasStatus {
				resetFields[fieldpath.APIVersion(gv.String())] = fieldpath.NewExcludeSetFilter(reset)
			}
			m, err := managedfields.NewDefaultFieldManager(typeConverter(), scheme, strategyDefaulter{rs}, scheme, rs.res.Kind, gv, sub, resetFields)
			if err != nil {
				fm.err = fmt.Errorf("field manager for %s: %w", rs.gr, err)
				return
			}
			fm.byName[sub] = m
		}
	})
	if fm.err != nil {
		return nil, fm.err
	}
	return fm.byName[subresource], nil
}

// trackManagedFields records in newObj's managedFields what manager changed
// from live (an empty object on create). Resources or subresources without a
// field manager are left as they are.
func (rs *resourceStore) trackManagedFields(live, newObj runtime.Object, manager, subresource string) runtime.Object {
	fm, err := rs.fieldManager(subresource)
	if err != nil || fm == nil {
		return newObj
	}
	return fm.UpdateNoErrors(live, newObj, manager)
}

// fieldManagerName is the fieldManager query parameter or, as upstream does,
// the product part of the User-Agent.
func fieldManagerName(r *http.Request, apply bool) (string, error) {
	m := r.URL.Query().Get("fieldManager")
	if m == "" {
		if apply {
			return "", newInvalidOptions(field.Required(field.NewPath("fieldManager"), "is required for apply patch"))
		}
		m, _, _ = strings.Cut(r.UserAgent(), "/")
	}
	if len(m) > 128 {
		return "", newInvalidOptions(field.TooLong(field.NewPath("fieldManager"), "", 128))
	}
	return m, nil
}

func newInvalidOptions(errs ...*field.Error) error {
	return registry.NewStatusError(http.StatusUnprocessableEntity, "Invalid", field.ErrorList(errs).ToAggregate().Error())
}
