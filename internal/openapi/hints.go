package openapi

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/applyconfigurations"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// Some facts upstream's schemas carry come from comment markers
// (+listType, +listMapKey, +mapType, +structType, +default) that are gone
// once the Go types are compiled. client-go keeps them, though: its apply
// configurations embed the structured-merge-diff schema generated from
// upstream's OpenAPI, and that schema has every list's type and keys, every
// atomic map and struct, and every field default. hints reads them from it.
// Types client-go does not know (custom resources, apiextensions) get none
// and fall back to what the struct tags say.

// fieldHints is what the structured-merge-diff schema says about one field.
type fieldHints struct {
	listType string   // atomic, set or map
	listKeys []string // for listType map
	mapType  string   // atomic or granular, for maps and struct references
	def      any      // default value (upstream publishes it in v3 only)
	hasDef   bool
}

// typeHints is what it says about one named type, keyed by definition name.
type typeHints struct {
	mapType string // x-kubernetes-map-type of a struct (atomic/granular)
	fields  map[string]fieldHints
}

// smdHints loads client-go's schema once per process (about 60ms).
var smdHints = sync.OnceValue(func() map[string]*typeHints {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil
	}
	tc := applyconfigurations.NewTypeConverter(s)
	tv, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}})
	if err != nil || tv == nil || tv.Schema() == nil {
		return nil
	}
	out := make(map[string]*typeHints, len(tv.Schema().Types))
	for _, td := range tv.Schema().Types {
		if td.Map == nil {
			continue
		}
		th := &typeHints{mapType: mapTypeOf(td.Map.ElementRelationship), fields: make(map[string]fieldHints, len(td.Map.Fields))}
		for _, f := range td.Map.Fields {
			fh := fieldHints{def: f.Default, hasDef: f.Default != nil}
			ref := f.Type
			switch {
			case ref.Inlined.List != nil:
				l := ref.Inlined.List
				switch l.ElementRelationship {
				case smdschema.Associative:
					if len(l.Keys) > 0 {
						fh.listType, fh.listKeys = "map", l.Keys
					} else {
						fh.listType = "set"
					}
				case smdschema.Atomic:
					fh.listType = "atomic"
				}
			case ref.Inlined.Map != nil:
				fh.mapType = mapTypeOf(ref.Inlined.Map.ElementRelationship)
			case ref.ElementRelationship != nil:
				fh.mapType = mapTypeOf(*ref.ElementRelationship)
			}
			th.fields[f.Name] = fh
		}
		out[td.Name] = th
	}
	return out
})

func mapTypeOf(er smdschema.ElementRelationship) string {
	switch er {
	case smdschema.Atomic:
		return "atomic"
	case smdschema.Separable:
		return "granular"
	}
	return ""
}
