package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"plainkube.dev/plainkube/internal/registry"
)

// Builder produces the OpenAPI documents for a set of resources. It is
// safe for concurrent use. Documents are built on first request and
// cached until the resource set changes.
type Builder struct {
	scheme *runtime.Scheme

	mu               sync.Mutex
	cur              *state
	custom, customV2 map[schema.GroupVersionKind]*spec.Schema
	aggregated       map[string]string
}

// state is one generation of documents: a resource set and what was built
// from it. A new state replaces the old one whenever the set changes, so a
// request holds a consistent view without locks.
type state struct {
	resources        []registry.Resource
	custom, customV2 map[schema.GroupVersionKind]*spec.Schema
	// aggregated are the v3 documents other servers serve (aggregated
	// group-versions): index key (apis/<group>/<version>) to their URL.
	aggregated map[string]string
	modified   time.Time

	v3Once sync.Once
	v3     *v3Set
	v3Err  error

	v2Once sync.Once
	v2     *v2Doc
	v2Err  error
}

// v3Set is the OpenAPI 3.0 documents of every group version.
type v3Set struct {
	docs      map[string]*v3Doc // by discovery key, e.g. apis/apps/v1
	discovery *body             // /openapi/v3
	schemas   map[string]*spec.Schema
}

type v3Doc struct {
	json *body
	hash string // upper-case hex SHA-512 of the JSON, as upstream computes it

	pbOnce sync.Once // the protobuf form is made on first request
	pb     *body
	pbErr  error
}

type v2Doc struct {
	json, pb *body
}

// New returns a Builder for resources, whose Go types are looked up in
// scheme. Resources whose kind the scheme does not know (custom resources)
// get a schema that accepts any fields, unless SetCustomResourceSchemas
// gives one.
func New(resources []registry.Resource, scheme *runtime.Scheme) *Builder {
	b := &Builder{scheme: scheme}
	b.cur = &state{resources: slices.Clone(resources), modified: time.Now()}
	return b
}

// SetResources replaces the resource set; documents are rebuilt on the
// next request.
func (b *Builder) SetResources(resources []registry.Resource) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cur = &state{resources: slices.Clone(resources), custom: b.custom, customV2: b.customV2, aggregated: b.aggregated, modified: time.Now()}
}

// SetCustomResourceSchemas sets the schemas of kinds the scheme does not
// know: v3 the structural schemas (as in a CustomResourceDefinition's
// openAPIV3Schema), published in the v3 documents with the standard
// fields added; v2 their whole Swagger 2.0 definitions (as upstream's CRD
// OpenAPI builder makes them), published in the v2 document as given.
// A kind with none accepts any fields.
func (b *Builder) SetCustomResourceSchemas(v3, v2 map[schema.GroupVersionKind]*spec.Schema) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.custom, b.customV2 = maps.Clone(v3), maps.Clone(v2)
	b.cur = &state{resources: b.cur.resources, custom: b.custom, customV2: b.customV2, aggregated: b.aggregated, modified: time.Now()}
}

// SetAggregatedV3 lists, in the /openapi/v3 index, the documents of
// group-versions another server serves (API aggregation), by index key
// (apis/<group>/<version>) and URL on this server (which proxies it). Their
// keys take the place of this server's own documents of the same name.
func (b *Builder) SetAggregatedV3(docs map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if maps.Equal(b.aggregated, docs) {
		return
	}
	b.aggregated = maps.Clone(docs)
	b.cur = &state{resources: b.cur.resources, custom: b.custom, customV2: b.customV2, aggregated: b.aggregated, modified: time.Now()}
}

func (b *Builder) state() *state {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur
}

// V3Schemas returns the OpenAPI 3.0 definitions (components.schemas) of
// every served kind and everything they refer to, keyed by definition
// name, as used to build a structured-merge-diff type converter or a
// strategic-merge-patch schema. The caller must not modify them.
func (b *Builder) V3Schemas() (map[string]*spec.Schema, error) {
	set, err := b.state().buildV3(b.scheme)
	if err != nil {
		return nil, err
	}
	return set.schemas, nil
}

// V3Document returns the OpenAPI 3.0 document of one group version as
// JSON, or false if no resource is served in it.
func (b *Builder) V3Document(gv schema.GroupVersion) ([]byte, bool, error) {
	set, err := b.state().buildV3(b.scheme)
	if err != nil {
		return nil, false, err
	}
	d, ok := set.docs[gvPath(gv)]
	if !ok {
		return nil, false, nil
	}
	return d.json.data, true, nil
}

// V2Document returns the Swagger 2.0 document as JSON.
func (b *Builder) V2Document() ([]byte, error) {
	d, err := b.state().buildV2(b.scheme)
	if err != nil {
		return nil, err
	}
	return d.json.data, nil
}

func hashOf(data []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(data))
}

// model is what both dialects are built from: the definitions (in one
// dialect) and the paths of each group version.
type model struct {
	gen   *generator
	gvs   []schema.GroupVersion
	paths map[schema.GroupVersion][]pathSpec
	roots map[schema.GroupVersion][]string
}

// buildModel runs the generator over every resource.
func buildModel(scheme *runtime.Scheme, resources []registry.Resource, custom map[schema.GroupVersionKind]*spec.Schema, v3 bool) (m *model, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("openapi: building schemas: %v", r)
		}
	}()
	g := newGenerator(v3, registeredKinds(scheme))
	m = &model{gen: g, paths: map[schema.GroupVersion][]pathSpec{}, roots: map[schema.GroupVersion][]string{}}
	// The definitions operations refer to besides the kinds'.
	g.define(reflect.TypeFor[metav1.Status]())
	g.define(reflect.TypeFor[metav1.DeleteOptions]())
	g.define(reflect.TypeFor[metav1.Patch]())
	g.define(reflect.TypeFor[metav1.APIResourceList]())
	g.define(reflect.TypeFor[metav1.WatchEvent]())
	for _, r := range resources {
		if r.Kind.Version == "" || r.Kind.Kind == "" || r.Plural == "" {
			continue
		}
		gv := r.Kind.GroupVersion()
		if _, ok := m.paths[gv]; !ok {
			m.gvs = append(m.gvs, gv)
			m.paths[gv] = []pathSpec{apiResourcesPath(gv)}
		}
		k := resolveKinds(g, scheme, r, custom)
		m.paths[gv] = append(m.paths[gv], resourcePaths(r, k)...)
	}
	// A document holds the definitions its operations refer to, and what
	// those refer to.
	for gv, paths := range m.paths {
		for _, p := range paths {
			for _, op := range p.ops {
				if op.body != "" {
					m.roots[gv] = append(m.roots[gv], op.body)
				}
				for _, r := range op.responses {
					if r.def != "" && r.def != defString {
						m.roots[gv] = append(m.roots[gv], r.def)
					}
				}
			}
		}
	}
	slices.SortFunc(m.gvs, func(a, b schema.GroupVersion) int { return strings.Compare(gvPath(a), gvPath(b)) })
	return m, nil
}

// registeredKinds maps each Go type in scheme to the kinds it is
// registered as (internal versions left out).
func registeredKinds(scheme *runtime.Scheme) map[reflect.Type][]schema.GroupVersionKind {
	out := map[reflect.Type][]schema.GroupVersionKind{}
	if scheme == nil {
		return out
	}
	for gvk, t := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		out[t] = append(out[t], gvk)
	}
	for _, l := range out {
		sortGVKs(l)
	}
	return out
}

// goType returns the Go struct type registered for gvk, if any.
func goType(scheme *runtime.Scheme, gvk schema.GroupVersionKind) (reflect.Type, bool) {
	if scheme == nil {
		return nil, false
	}
	obj, err := scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	if _, ok := obj.(runtime.Unstructured); ok {
		return nil, false
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t, t.Kind() == reflect.Struct
}

// resolveKinds defines a resource's kinds and returns their names.
func resolveKinds(g *generator, scheme *runtime.Scheme, r registry.Resource, custom map[schema.GroupVersionKind]*spec.Schema) resolvedKinds {
	k := resolvedKinds{sub: map[string]subKind{}}
	listGVK := r.Kind.GroupVersion().WithKind(r.Kind.Kind + "List")
	if t, ok := goType(scheme, r.Kind); ok {
		k.builtin = true
		k.kind = g.define(t)
		if lt, ok := goType(scheme, listGVK); ok {
			k.list = g.define(lt)
		}
	}
	if !k.builtin {
		k.kind, k.list = g.defineCustom(r.Kind, custom[r.Kind])
	}
	// A built-in kind with no list kind (Binding, TokenReview...) is
	// create-only; its list operations are left out.
	for _, sub := range r.Subresources {
		sgvk, ok := subresourceKinds[sub]
		if !ok {
			continue
		}
		if strings.Contains(sgvk.Kind, "%s") {
			sgvk.Kind = fmt.Sprintf(sgvk.Kind, r.Kind.Kind)
		}
		sk := subKind{gvk: sgvk}
		switch sub {
		case "exec", "attach", "portforward", "proxy":
			// Options kinds travel as query parameters, not bodies.
		default:
			if t, ok := goType(scheme, sgvk); ok {
				sk.def = g.define(t)
			} else {
				continue
			}
		}
		k.sub[sub] = sk
	}
	return k
}

// defineCustom defines a kind with no Go type and its list. Without a
// given schema, the kind accepts any fields besides the standard ones.
func (g *generator) defineCustom(gvk schema.GroupVersionKind, given *spec.Schema) (kind, list string) {
	kind = customDefinitionName(gvk)
	list = customDefinitionName(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	outer := g.current
	defer func() { g.current = outer }()
	objectMeta := g.define(reflect.TypeFor[metav1.ObjectMeta]())
	listMeta := g.define(reflect.TypeFor[metav1.ListMeta]())
	str := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}

	if _, ok := g.defs[kind]; !ok && given != nil && !g.v3 {
		// A whole v2 definition: only its metadata reference is ours to
		// make (so that ObjectMeta's definition goes with it). Without
		// metadata (a kind that keeps unknown fields) it stays a bare
		// object, which kubectl does not check fields against.
		s := *DeepCopySchema(given)
		g.current = kind
		g.deps[kind] = map[string]bool{}
		if m, ok := s.Properties["metadata"]; ok {
			s.Properties["metadata"] = g.refField(objectMeta, m.Description)
		}
		if s.Extensions == nil {
			s.Extensions = spec.Extensions{}
		}
		s.Extensions[extGVK] = gvkExtension([]schema.GroupVersionKind{gvk})
		g.defs[kind] = &s
	}
	if _, ok := g.defs[kind]; !ok {
		var s spec.Schema
		if given != nil && g.v3 {
			s = *DeepCopySchema(given)
		} else {
			s = spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}
			s.AddExtension(extPreserveFields, true)
		}
		if s.Properties == nil {
			s.Properties = map[string]spec.Schema{}
		}
		g.current = kind
		g.deps[kind] = map[string]bool{}
		s.Properties["apiVersion"] = withDescription(str, (metav1.TypeMeta{}).SwaggerDoc()["apiVersion"])
		s.Properties["kind"] = withDescription(str, (metav1.TypeMeta{}).SwaggerDoc()["kind"])
		s.Properties["metadata"] = g.refField(objectMeta, "Standard object's metadata.")
		if s.Extensions == nil {
			s.Extensions = spec.Extensions{}
		}
		s.Extensions[extGVK] = gvkExtension([]schema.GroupVersionKind{gvk})
		g.defs[kind] = &s
	}
	if _, ok := g.defs[list]; !ok {
		g.current = list
		g.deps[list] = map[string]bool{}
		items := g.ref(kind)
		s := spec.Schema{SchemaProps: spec.SchemaProps{
			Description: gvk.Kind + "List is a list of " + gvk.Kind + ".",
			Type:        []string{"object"},
			Properties: map[string]spec.Schema{
				"apiVersion": withDescription(str, (metav1.TypeMeta{}).SwaggerDoc()["apiVersion"]),
				"kind":       withDescription(str, (metav1.TypeMeta{}).SwaggerDoc()["kind"]),
				"metadata":   g.refField(listMeta, "Standard list metadata."),
				"items":      {SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: &items}}},
			},
		}}
		s.AddExtension(extGVK, gvkExtension([]schema.GroupVersionKind{gvk.GroupVersion().WithKind(gvk.Kind + "List")}))
		g.defs[list] = &s
	}
	return kind, list
}

// refField is a described reference to a definition, in the dialect's form.
func (g *generator) refField(name, desc string) spec.Schema {
	r := g.ref(name)
	if g.v3 {
		return spec.Schema{SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{r}, Description: desc}}
	}
	r.Description = desc
	return r
}

func withDescription(s spec.Schema, d string) spec.Schema {
	s.Description = d
	return s
}

// DeepCopySchema copies a schema through its JSON form.
func DeepCopySchema(s *spec.Schema) *spec.Schema {
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

func info() *spec.Info {
	return &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: "unversioned"}}
}

// buildV3 builds (once per state) the OpenAPI 3.0 document of every
// group version and the /openapi/v3 index.
func (st *state) buildV3(scheme *runtime.Scheme) (*v3Set, error) {
	st.v3Once.Do(func() {
		m, err := buildModel(scheme, st.resources, st.custom, true)
		if err != nil {
			st.v3Err = err
			return
		}
		set := &v3Set{docs: map[string]*v3Doc{}, schemas: map[string]*spec.Schema{}}
		index := map[string]map[string]string{}
		// Definitions are shared between group versions (PodSpec is in
		// core/v1, apps/v1, batch/v1...): encode each once.
		encoded := map[string][]byte{}
		for _, gv := range m.gvs {
			paths := &spec3.Paths{Paths: map[string]*spec3.Path{}}
			tag := tagName(gv)
			for _, p := range m.paths[gv] {
				paths.Paths[p.path] = v3Path(p, tag)
			}
			names := slices.Sorted(maps.Keys(m.gen.closure(m.roots[gv])))
			data, err := encodeV3(gv, paths, names, m.gen.defs, encoded)
			if err != nil {
				st.v3Err = fmt.Errorf("openapi: encoding %s: %w", gvPath(gv), err)
				return
			}
			d := &v3Doc{hash: hashOf(data)}
			d.json = &body{data: data, etag: d.hash, contentType: "application/json"}
			set.docs[gvPath(gv)] = d
			index[gvPath(gv)] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gvPath(gv) + "?hash=" + d.hash}
		}
		for name := range m.gen.closure(allRoots(m)) {
			set.schemas[name] = m.gen.defs[name]
		}
		for key, url := range st.aggregated {
			index[key] = map[string]string{"serverRelativeURL": url}
		}
		data, err := json.Marshal(map[string]any{"paths": index})
		if err != nil {
			st.v3Err = err
			return
		}
		set.discovery = &body{data: data, etag: hashOf(data), contentType: "application/json"}
		st.v3 = set
	})
	return st.v3, st.v3Err
}

// v3Prologue and v3Epilogue are the fixed parts of every v3 document.
var (
	v3Prologue = mustJSON(map[string]any{"openapi": "3.0.0", "info": info()})
	v3Epilogue = mustJSON(map[string]any{
		"securitySchemes": spec3.SecuritySchemes{"BearerToken": &spec3.SecurityScheme{SecuritySchemeProps: spec3.SecuritySchemeProps{
			Type: "apiKey", Description: "Bearer Token authentication", Name: "authorization", In: "header",
		}}},
	})
)

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// encodeV3 writes one group version's OpenAPI 3.0 document:
// {"openapi","info","paths","components":{"schemas","securitySchemes"}}.
// encoded caches definitions already written for other group versions.
func encodeV3(gv schema.GroupVersion, paths *spec3.Paths, names []string, defs map[string]*spec.Schema, encoded map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(v3Prologue[:len(v3Prologue)-1]) // without the closing brace
	buf.WriteString(`,"paths":`)
	p, err := paths.MarshalJSON()
	if err != nil {
		return nil, err
	}
	buf.Write(p)
	buf.WriteString(`,"components":{"schemas":{`)
	for i, name := range names {
		data, ok := encoded[name]
		if own := ownKinds(defs[name], gv); own != nil {
			if data, err = own.MarshalJSON(); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		} else if !ok {
			if data, err = defs[name].MarshalJSON(); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			encoded[name] = data
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(data)
	}
	buf.WriteString(`},`)
	buf.Write(v3Epilogue[1:]) // without the opening brace
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// ownKinds returns, for a definition registered as a kind in several
// groups (DeleteOptions, WatchEvent), a copy that lists only the kinds of
// the document's group version and of the core group, as upstream's
// documents do; nil for any other definition.
func ownKinds(s *spec.Schema, gv schema.GroupVersion) *spec.Schema {
	l, ok := s.Extensions[extGVK].([]any)
	if !ok || len(l) < 2 {
		return nil
	}
	var kept []any
	for _, e := range l {
		m, _ := e.(map[string]any)
		g, v := m["group"], m["version"]
		if (g == "" && v == "v1") || (g == gv.Group && v == gv.Version) {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(l) {
		return nil
	}
	c := *s
	c.Extensions = maps.Clone(s.Extensions)
	c.Extensions[extGVK] = kept
	return &c
}

func allRoots(m *model) []string {
	var roots []string
	for _, gv := range m.gvs {
		roots = append(roots, m.roots[gv]...)
	}
	return roots
}

// buildV2 builds (once per state) the Swagger 2.0 document of all group
// versions, as JSON and as protobuf.
func (st *state) buildV2(scheme *runtime.Scheme) (*v2Doc, error) {
	st.v2Once.Do(func() {
		m, err := buildModel(scheme, st.resources, st.customV2, false)
		if err != nil {
			st.v2Err = err
			return
		}
		sw := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
			Swagger:     "2.0",
			Info:        info(),
			Paths:       &spec.Paths{Paths: map[string]spec.PathItem{}},
			Definitions: spec.Definitions{},
			SecurityDefinitions: spec.SecurityDefinitions{"BearerToken": &spec.SecurityScheme{SecuritySchemeProps: spec.SecuritySchemeProps{
				Type: "apiKey", Description: "Bearer Token authentication", Name: "authorization", In: "header",
			}}},
			Security:   []map[string][]string{{"BearerToken": {}}},
			Parameters: map[string]spec.Parameter{},
		}}
		for _, gv := range m.gvs {
			tag := tagName(gv)
			for _, p := range m.paths[gv] {
				sw.Paths.Paths[p.path] = v2Path(p, tag)
			}
		}
		paths, tags := discoveryPaths(m.gen, m.gvs)
		roots := allRoots(m)
		for i, p := range paths {
			sw.Paths.Paths[p.path] = v2Path(p, tags[i])
			for _, r := range p.ops[0].responses {
				if r.def != defString {
					roots = append(roots, r.def)
				}
			}
		}
		if err := sharedV2Params(sw); err != nil {
			st.v2Err = fmt.Errorf("openapi: sharing v2 parameters: %w", err)
			return
		}
		for name := range m.gen.closure(roots) {
			sw.Definitions[name] = *m.gen.defs[name]
		}
		data, err := sw.MarshalJSON()
		if err != nil {
			st.v2Err = fmt.Errorf("openapi: encoding v2: %w", err)
			return
		}
		pb, err := v2Protobuf(data)
		if err != nil {
			st.v2Err = err
			return
		}
		st.v2 = &v2Doc{
			json: &body{data: data, etag: hashOf(data), contentType: "application/json"},
			pb:   &body{data: pb, etag: hashOf(pb), contentType: mtV2ProtobufLegacy},
		}
	})
	return st.v2, st.v2Err
}
