package openapi

import (
	"maps"
	"sync"

	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	aggregatoropenapi "k8s.io/kube-aggregator/pkg/generated/openapi"
	builder3util "k8s.io/kube-openapi/pkg/builder3/util"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Some modules publish the OpenAPI definitions upstream's generator made
// from their types' comments: apiextensions-apiserver for
// apimachinery's meta types, runtime.RawExtension, the special scalars
// (Time, Quantity, IntOrString), autoscaling/v1 and its own CRD types;
// kube-aggregator for apiregistration. Where a type has one, it is used
// as published (it has what reflection cannot see: required fields,
// +listType markers, unions, descriptions of types without SwaggerDoc);
// the rest of k8s.io/api is made by reflection (schema.go).

// generatedDefinitions returns the published definitions by name, with
// references written for the dialect (v3 or v2).
func generatedDefinitions(v3 bool) map[string]common.OpenAPIDefinition {
	if v3 {
		return generatedV3()
	}
	return generatedV2()
}

var (
	generatedV3 = sync.OnceValue(func() map[string]common.OpenAPIDefinition { return loadGenerated("#/components/schemas/") })
	generatedV2 = sync.OnceValue(func() map[string]common.OpenAPIDefinition { return loadGenerated("#/definitions/") })
)

func loadGenerated(prefix string) map[string]common.OpenAPIDefinition {
	ref := func(name string) spec.Ref { return spec.MustCreateRef(prefix + common.EscapeJsonPointer(name)) }
	out := aggregatoropenapi.GetOpenAPIDefinitions(ref)
	maps.Copy(out, apiextensionsopenapi.GetOpenAPIDefinitions(ref))
	return out
}

// generatedSchema is the published definition name in the dialect: in v3
// a reference with siblings is wrapped in allOf, as upstream's builder
// does; in v2 a type with a distinct Swagger 2.0 form uses it.
func (g *generator) generatedSchema(def common.OpenAPIDefinition) spec.Schema {
	s := *DeepCopySchema(&def.Schema)
	if g.v3 {
		delete(s.Extensions, common.ExtensionV2Schema)
		if len(s.Extensions) == 0 {
			s.Extensions = nil
		}
		return *builder3util.WrapRefs(&s)
	}
	if v2, ok := def.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
		s = *DeepCopySchema(&v2)
	}
	withoutDefaults(&s)
	return s
}

// withoutDefaults removes the defaults of a schema and of the schemas in
// it: upstream publishes defaults in v3 only.
func withoutDefaults(s *spec.Schema) {
	if s == nil {
		return
	}
	s.Default = nil
	for k, p := range s.Properties {
		withoutDefaults(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		withoutDefaults(s.Items.Schema)
		for i := range s.Items.Schemas {
			withoutDefaults(&s.Items.Schemas[i])
		}
	}
	if s.AdditionalProperties != nil {
		withoutDefaults(s.AdditionalProperties.Schema)
	}
	for i := range s.AllOf {
		withoutDefaults(&s.AllOf[i])
	}
}
