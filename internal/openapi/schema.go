package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Extension names upstream uses.
const (
	extGVK            = "x-kubernetes-group-version-kind"
	extAction         = "x-kubernetes-action"
	extPatchStrategy  = "x-kubernetes-patch-strategy"
	extPatchMergeKey  = "x-kubernetes-patch-merge-key"
	extListType       = "x-kubernetes-list-type"
	extListMapKeys    = "x-kubernetes-list-map-keys"
	extMapType        = "x-kubernetes-map-type"
	extUnions         = "x-kubernetes-unions"
	extIntOrString    = "x-kubernetes-int-or-string"
	extPreserveFields = "x-kubernetes-preserve-unknown-fields"
)

// Interfaces by which apimachinery types describe themselves to upstream's
// generator; the same methods are there at run time.
type (
	swaggerDoc      interface{ SwaggerDoc() map[string]string }
	openAPIType     interface{ OpenAPISchemaType() []string }
	openAPIFormat   interface{ OpenAPISchemaFormat() string }
	openAPIV3OneOf  interface{ OpenAPIV3OneOfTypes() []string }
	jsonMarshaler   = json.Marshaler
	jsonUnmarshaler = json.Unmarshaler
)

// Descriptions of the apimachinery types that have neither a SwaggerDoc
// method nor a published definition (generated.go), in our own words.
var extraDescriptions = map[string]string{
	"io.k8s.apimachinery.pkg.util.intstr.IntOrString": "IntOrString holds either an int32 or a string. In JSON and YAML it is written as whichever of the two it holds.",
}

// generator turns Go types into OpenAPI definitions, in either the
// Swagger 2.0 (v2) or OpenAPI 3.0 (v3) dialect. It is not safe for
// concurrent use; a Builder makes one per build.
type generator struct {
	v3 bool
	// refPrefix is "#/definitions/" (v2) or "#/components/schemas/" (v3).
	refPrefix string
	hints     map[string]*typeHints
	// kinds maps a Go type to every group/version/kind it is registered as;
	// kindsByName the same by definition name.
	kinds       map[reflect.Type][]schema.GroupVersionKind
	kindsByName map[string][]schema.GroupVersionKind
	// generated are the published definitions (generated.go).
	generated map[string]common.OpenAPIDefinition

	defs  map[string]*spec.Schema
	deps  map[string]map[string]bool // definition → definitions it refers to
	names map[reflect.Type]string
	// current is the definition being built, for recording dependencies.
	current string
}

func newGenerator(v3 bool, kinds map[reflect.Type][]schema.GroupVersionKind) *generator {
	g := &generator{
		v3:          v3,
		hints:       smdHints(),
		kinds:       kinds,
		kindsByName: map[string][]schema.GroupVersionKind{},
		generated:   generatedDefinitions(v3),
		defs:        map[string]*spec.Schema{},
		deps:        map[string]map[string]bool{},
		names:       map[reflect.Type]string{},
	}
	for t, gvks := range kinds {
		g.kindsByName[definitionName(t)] = gvks
	}
	if v3 {
		g.refPrefix = "#/components/schemas/"
	} else {
		g.refPrefix = "#/definitions/"
	}
	return g
}

// define makes sure the named type t has a definition and returns its name.
func (g *generator) define(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name, ok := g.names[t]; ok {
		return name
	}
	name := definitionName(t)
	g.names[t] = name
	if _, ok := g.defs[name]; ok {
		return name
	}
	if _, ok := g.generated[name]; ok {
		return g.defineGenerated(name)
	}
	// Reserve the name first: types refer to themselves (JSONSchemaProps).
	s := &spec.Schema{}
	g.defs[name] = s
	g.deps[name] = map[string]bool{}
	outer := g.current
	g.current = name
	*s = g.definitionBody(t, name)
	g.current = outer
	return name
}

// defineGenerated defines a published definition and what it refers to.
func (g *generator) defineGenerated(name string) string {
	if _, ok := g.defs[name]; ok {
		return name
	}
	def := g.generated[name]
	s := g.generatedSchema(def)
	if gvks := g.kindsByName[name]; len(gvks) > 0 {
		s.AddExtension(extGVK, gvkExtension(gvks))
	}
	g.defs[name] = &s
	g.deps[name] = map[string]bool{}
	for _, d := range def.Dependencies {
		g.deps[name][d] = true
		if _, ok := g.generated[d]; ok {
			g.defineGenerated(d)
		}
	}
	return name
}

// definitionBody is the schema of a named type's definition.
func (g *generator) definitionBody(t reflect.Type, name string) spec.Schema {
	var s spec.Schema
	zero := zeroValue(t)
	if d, ok := zero.(swaggerDoc); ok {
		s.Description = d.SwaggerDoc()[""]
	}
	if s.Description == "" {
		s.Description = extraDescriptions[name]
	}
	switch {
	case implements(t, (*openAPIType)(nil)):
		// Types that serialize as a scalar (Time, Quantity, IntOrString, ...).
		types := zero.(openAPIType).OpenAPISchemaType()
		if f, ok := zero.(openAPIFormat); ok {
			s.Format = f.OpenAPISchemaFormat()
		}
		if o, ok := zero.(openAPIV3OneOf); ok && g.v3 {
			for _, ty := range o.OpenAPIV3OneOfTypes() {
				s.OneOf = append(s.OneOf, spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{ty}}})
			}
		} else {
			s.Type = types
		}
	case t.Kind() == reflect.Struct && (implements(t, (*jsonMarshaler)(nil)) || implements(reflect.PointerTo(t), (*jsonMarshaler)(nil))):
		// Types with their own JSON form and no declared schema type.
		// Embedded objects (RawExtension, Unknown) and field sets
		// (FieldsV1) are objects; anything else (apiextensions' JSON,
		// JSONSchemaPropsOrBool, ...) may be any JSON value.
		if strings.HasPrefix(name, "io.k8s.apimachinery.pkg.runtime.") || strings.HasPrefix(name, "io.k8s.apimachinery.pkg.apis.meta.v1.") {
			s.Type = []string{"object"}
		}
	case t.Kind() == reflect.Struct:
		s.Type = []string{"object"}
		s.Properties = map[string]spec.Schema{}
		g.addFields(&s, t, name)
		if len(s.Properties) == 0 {
			s.Properties = nil
		}
		if h := g.hints[name]; h != nil && h.mapType != "" {
			s.AddExtension(extMapType, h.mapType)
		}
		if u, ok := apiUnions[name]; ok {
			s.AddExtension(extUnions, u.extension())
		}
	default:
		// A named non-struct type (type Foo string, []Foo, map...).
		s = g.inlineSchema(t)
		if d, ok := zero.(swaggerDoc); ok {
			s.Description = d.SwaggerDoc()[""]
		}
	}
	if gvks := g.kinds[t]; len(gvks) > 0 {
		s.AddExtension(extGVK, gvkExtension(gvks))
	}
	return s
}

// addFields adds the JSON fields of struct type t (declared on definition
// name) to s, flattening inline embedded structs.
func (g *generator) addFields(s *spec.Schema, t reflect.Type, name string) {
	g.addFieldsWithHints(s, t, g.hints[name])
}

func (g *generator) addFieldsWithHints(s *spec.Schema, t reflect.Type, hints *typeHints) {
	var docs map[string]string
	if d, ok := zeroValue(t).(swaggerDoc); ok {
		docs = d.SwaggerDoc()
	}
	marks := apiMarkers[definitionName(t)]
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		jsonName, inline, skip := jsonField(f)
		if skip {
			continue
		}
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				// Inlined fields keep the documentation of the type that
				// declares them, and the topology hints of the outer type.
				g.addFieldsWithHints(s, ft, hints)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		mk := marks[jsonName]
		fs := g.fieldSchema(f, jsonName, docs[jsonName], hints, mk)
		s.Properties[jsonName] = fs
		// Upstream's generator makes a field without omitempty required,
		// unless its comment says +optional, and one with +required
		// required whatever its tag.
		if mk.required || !hasOmitEmpty(f) && !mk.optional {
			s.Required = append(s.Required, jsonName)
		}
	}
}

// jsonField reads a struct field's json tag: its name, whether it is
// inlined, whether it is skipped.
func jsonField(f reflect.StructField) (name string, inline, skip bool) {
	tag, hasTag := f.Tag.Lookup("json")
	if tag == "-" {
		return "", false, true
	}
	name, opts, _ := strings.Cut(tag, ",")
	if f.Anonymous && name == "" {
		return "", true, false
	}
	for _, o := range strings.Split(opts, ",") {
		if o == "inline" && name == "" {
			return "", true, false
		}
	}
	if !f.IsExported() {
		return "", false, true
	}
	if !hasTag || name == "" {
		name = f.Name
	}
	return name, false, false
}

// fieldSchema is the schema of one struct field, with its description,
// patch strategy and list/map topology.
func (g *generator) fieldSchema(f reflect.StructField, jsonName, doc string, hints *typeHints, mk fieldMarkers) spec.Schema {
	s := g.inlineSchema(f.Type)
	var fh fieldHints
	if hints != nil {
		fh = hints.fields[jsonName]
	}
	// The source's markers stand in for what client-go's schema does not
	// know (types it has no apply configuration for).
	if fh.listType == "" {
		fh.listType, fh.listKeys = mk.listType, mk.listMapKeys
	}
	if fh.mapType == "" {
		fh.mapType = mk.mapType
	}
	ext := spec.Extensions{}
	if ps := f.Tag.Get("patchStrategy"); ps != "" {
		ext[extPatchStrategy] = ps
	}
	mergeKey := f.Tag.Get("patchMergeKey")
	if mergeKey != "" {
		ext[extPatchMergeKey] = mergeKey
	}
	isList := len(s.Type) == 1 && s.Type[0] == "array"
	switch {
	case isList && fh.listType != "":
		ext[extListType] = fh.listType
		if fh.listType == "map" {
			ext[extListMapKeys] = fh.listKeys
		}
	case isList && hints == nil && mergeKey != "":
		// No upstream topology known: a merge key makes the list a map.
		ext[extListType] = "map"
		ext[extListMapKeys] = []string{mergeKey}
	}
	if fh.mapType != "" {
		ext[extMapType] = fh.mapType
	}
	def, hasDef := zeroDefault(f), false
	hasDef = def != nil
	if fh.hasDef {
		def, hasDef = jsonValue(fh.def), true
	}
	if g.v3 && s.Ref.String() != "" && (doc != "" || len(ext) > 0 || hasDef) {
		// OpenAPI 3.0 ignores the siblings of a $ref, so upstream wraps
		// the reference in allOf to describe the field. (Swagger 2.0
		// readers, kubectl's included, read the siblings.)
		s = spec.Schema{SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{s}}}
	}
	s.Description = doc
	if hasDef && g.v3 {
		// Upstream publishes defaults in v3 only.
		s.Default = def
	}
	if len(ext) > 0 {
		s.Extensions = ext
	}
	return s
}

func hasOmitEmpty(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	return slices.Contains(strings.Split(opts, ","), "omitempty")
}

// zeroDefault is the default upstream's generator gives a field whether or
// not its comments name one: {} for a struct held by value (that is not
// a scalar in disguise such as Time or Quantity), the zero value for a
// scalar that is always written (no omitempty); nil otherwise.
func zeroDefault(f reflect.StructField) any {
	t := f.Type
	if implements(t, (*jsonUnmarshaler)(nil)) || implements(reflect.PointerTo(t), (*jsonUnmarshaler)(nil)) {
		return nil
	}
	if _, opts, _ := strings.Cut(f.Tag.Get("json"), ","); slices.Contains(strings.Split(opts, ","), "string") {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if t.NumField() == 1 && t.Field(0).Anonymous {
			return zeroDefault(t.Field(0))
		}
		return map[string]any{}
	case reflect.String:
		if !hasOmitEmpty(f) {
			return ""
		}
	case reflect.Bool:
		if !hasOmitEmpty(f) {
			return false
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		if !hasOmitEmpty(f) {
			return 0
		}
	}
	return nil
}

// inlineSchema is the schema written where a value of type t appears: a
// $ref for named structs and special types, an inline schema otherwise.
func (g *generator) inlineSchema(t reflect.Type) spec.Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() != "" && t.PkgPath() != "" {
		if t.Kind() == reflect.Struct || implements(t, (*openAPIType)(nil)) {
			return g.ref(g.define(t))
		}
	}
	switch t.Kind() {
	case reflect.Interface:
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}
	case reflect.Struct:
		// An anonymous struct: inline its fields.
		s := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{}}}
		g.addFields(&s, t, "")
		return s
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}, Format: "byte"}}
		}
		items := g.inlineSchema(t.Elem())
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: &items}}}
	case reflect.Map:
		val := g.inlineSchema(t.Elem())
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &val}}}
	}
	typ, format := common.OpenAPITypeFormat(t.Kind().String())
	if typ == "" {
		panic(fmt.Sprintf("openapi: no schema for Go type %v", t))
	}
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{typ}, Format: format}}
}

// isStructRef reports whether t (a list or map element) is a non-pointer
// struct whose schema is an object definition (not a scalar like Quantity).
func isStructRef(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !implements(t, (*openAPIType)(nil)) &&
		!implements(t, (*jsonMarshaler)(nil)) && !implements(reflect.PointerTo(t), (*jsonMarshaler)(nil))
}

func (g *generator) ref(name string) spec.Schema {
	if g.current != "" {
		g.deps[g.current][name] = true
	}
	return spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(g.refPrefix + name)}}
}

func implements(t reflect.Type, iface any) bool {
	return t.Implements(reflect.TypeOf(iface).Elem())
}

// gvkExtension is the value of x-kubernetes-group-version-kind on a
// definition: every kind the type is registered as, sorted.
func gvkExtension(gvks []schema.GroupVersionKind) []any {
	out := make([]any, 0, len(gvks))
	for _, k := range gvks {
		out = append(out, map[string]any{"group": k.Group, "version": k.Version, "kind": k.Kind})
	}
	return out
}

func sortGVKs(gvks []schema.GroupVersionKind) {
	sort.Slice(gvks, func(i, j int) bool {
		a, b := gvks[i], gvks[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Kind < b.Kind
	})
}

// jsonValue converts a value decoded from YAML into one encoding/json can
// write (maps with interface keys become string-keyed).
func jsonValue(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonValue(e)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = jsonValue(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = jsonValue(e)
		}
		return l
	}
	return v
}

// closure returns the names of the definitions reachable from roots.
func (g *generator) closure(roots []string) map[string]bool {
	seen := map[string]bool{}
	stack := append([]string(nil), roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n] {
			continue
		}
		seen[n] = true
		for d := range g.deps[n] {
			if !seen[d] {
				stack = append(stack, d)
			}
		}
	}
	return seen
}
