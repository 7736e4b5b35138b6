package openapi

import (
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// This file writes the operation model of paths.go as Swagger 2.0 (v2)
// and OpenAPI 3.0 (v3).

func gvkValue(op opSpec) map[string]any {
	return map[string]any{"group": op.gvk.Group, "version": op.gvk.Version, "kind": op.gvk.Kind}
}

func opExtensions(op opSpec) spec.Extensions {
	ext := spec.Extensions{}
	if op.action != "" {
		ext[extAction] = op.action
	}
	if op.gvk != nil {
		ext[extGVK] = gvkValue(op)
	}
	if len(ext) == 0 {
		return nil
	}
	return ext
}

func paramSchema(p param) *spec.Schema {
	return &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{p.typ}, UniqueItems: true}}
}

// ---- OpenAPI 3.0 ----

func v3Params(ps []param) []*spec3.Parameter {
	if len(ps) == 0 {
		return nil
	}
	out := make([]*spec3.Parameter, 0, len(ps))
	for _, p := range ps {
		out = append(out, &spec3.Parameter{ParameterProps: spec3.ParameterProps{
			Name: p.name, In: p.in, Description: p.desc, Required: p.in == "path", Schema: paramSchema(p),
		}})
	}
	return out
}

func v3Schema(def string) *spec.Schema {
	if def == defString {
		return &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
	}
	return &spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef("#/components/schemas/" + def)}}
}

func v3Content(def string, types []string) map[string]*spec3.MediaType {
	s := v3Schema(def)
	m := make(map[string]*spec3.MediaType, len(types))
	for _, t := range types {
		m[t] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: s}}
	}
	return m
}

func v3Operation(op opSpec, tag string) *spec3.Operation {
	o := &spec3.Operation{OperationProps: spec3.OperationProps{
		Tags: []string{tag}, Description: op.desc, OperationId: op.id, Parameters: v3Params(op.params),
	}}
	if op.body != "" {
		o.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{
			Content: v3Content(op.body, op.bodyTypes), Required: op.body != defDeleteOptions,
		}}
	}
	rs := map[int]*spec3.Response{401: {ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}}
	for _, r := range op.responses {
		resp := &spec3.Response{ResponseProps: spec3.ResponseProps{Description: r.desc}}
		if r.def != "" {
			resp.Content = v3Content(r.def, op.produces)
		}
		rs[r.code] = resp
	}
	o.Responses = &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: rs}}
	o.Extensions = opExtensions(op)
	return o
}

func v3Path(p pathSpec, tag string) *spec3.Path {
	out := &spec3.Path{PathProps: spec3.PathProps{Parameters: v3Params(p.params)}}
	for _, op := range p.ops {
		o := v3Operation(op, tag)
		switch op.method {
		case "get":
			out.Get = o
		case "put":
			out.Put = o
		case "post":
			out.Post = o
		case "patch":
			out.Patch = o
		case "delete":
			out.Delete = o
		case "options":
			out.Options = o
		case "head":
			out.Head = o
		}
	}
	return out
}

// ---- Swagger 2.0 ----

// v2Params writes parameters inline; sharedV2Params then moves the ones
// many operations repeat to the document's parameters section.
func v2Params(ps []param) []spec.Parameter {
	if len(ps) == 0 {
		return nil
	}
	out := make([]spec.Parameter, 0, len(ps))
	for _, p := range ps {
		out = append(out, spec.Parameter{
			ParamProps:        spec.ParamProps{Name: p.name, In: p.in, Description: p.desc, Required: p.in == "path"},
			SimpleSchema:      spec.SimpleSchema{Type: p.typ},
			CommonValidations: spec.CommonValidations{UniqueItems: true},
		})
	}
	return out
}

// sharedV2Params writes each parameter that is not specific to a kind
// once, in the document's parameters section, and refers to it, as
// upstream's Swagger builder does: named by the parameter's name and a
// hash of its JSON form. Name parameters and kind bodies are specific;
// dryRun and fieldValidation stay inline because kubectl looked for them
// there to detect server support.
func sharedV2Params(sw *spec.Swagger) error {
	sw.Parameters = map[string]spec.Parameter{}
	names := map[string]string{} // JSON → shared name
	share := func(ps []spec.Parameter) error {
		for i, p := range ps {
			switch {
			case p.Ref.String() != "",
				(p.In == "query" || p.In == "path") && p.Name == "name",
				p.In == "query" && (p.Name == "fieldValidation" || p.Name == "dryRun"),
				p.In == "body" && p.Schema != nil && !strings.HasPrefix(p.Schema.Ref.String(), "#/definitions/io.k8s.apimachinery"):
				continue
			}
			data, err := json.Marshal(p)
			if err != nil {
				return err
			}
			name, ok := names[string(data)]
			if !ok {
				h := fnv.New64()
				h.Write(data)
				name = p.Name + "-" + base64.URLEncoding.EncodeToString(h.Sum(nil)[:6])
				for n := 1; ; n++ {
					if _, taken := sw.Parameters[name]; !taken {
						break
					}
					name = p.Name + "-" + strconv.Itoa(n)
				}
				names[string(data)] = name
				sw.Parameters[name] = p
			}
			ps[i] = spec.Parameter{Refable: spec.Refable{Ref: spec.MustCreateRef("#/parameters/" + name)}}
		}
		return nil
	}
	for _, path := range slices.Sorted(maps.Keys(sw.Paths.Paths)) {
		item := sw.Paths.Paths[path]
		for _, op := range []*spec.Operation{item.Get, item.Put, item.Post, item.Delete, item.Options, item.Head, item.Patch} {
			if op != nil {
				if err := share(op.Parameters); err != nil {
					return err
				}
			}
		}
		if err := share(item.Parameters); err != nil {
			return err
		}
	}
	return nil
}

func v2Schema(def string) *spec.Schema {
	if def == defString {
		return &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
	}
	return &spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef("#/definitions/" + def)}}
}

func v2Operation(op opSpec, tag string) *spec.Operation {
	o := &spec.Operation{OperationProps: spec.OperationProps{
		Description: op.desc, ID: op.id, Tags: []string{tag}, Schemes: []string{"https"},
		Consumes: op.bodyTypes, Produces: op.produces, Parameters: v2Params(op.params),
	}}
	if op.body != "" {
		o.Parameters = append([]spec.Parameter{{ParamProps: spec.ParamProps{
			Name: "body", In: "body", Required: op.body != defDeleteOptions, Schema: v2Schema(op.body),
		}}}, o.Parameters...)
	}
	if len(o.Consumes) == 0 {
		o.Consumes = op.consumes
	}
	if len(o.Consumes) == 0 && !op.noConsumes {
		o.Consumes = []string{"*/*"}
	}
	rs := map[int]spec.Response{401: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}}
	for _, r := range op.responses {
		resp := spec.Response{ResponseProps: spec.ResponseProps{Description: r.desc}}
		if r.def != "" {
			resp.Schema = v2Schema(r.def)
		}
		rs[r.code] = resp
	}
	o.Responses = &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: rs}}
	o.Extensions = opExtensions(op)
	return o
}

func v2Path(p pathSpec, tag string) spec.PathItem {
	out := spec.PathItem{PathItemProps: spec.PathItemProps{Parameters: v2Params(p.params)}}
	for _, op := range p.ops {
		o := v2Operation(op, tag)
		switch op.method {
		case "get":
			out.Get = o
		case "put":
			out.Put = o
		case "post":
			out.Post = o
		case "patch":
			out.Patch = o
		case "delete":
			out.Delete = o
		case "options":
			out.Options = o
		case "head":
			out.Head = o
		}
	}
	return out
}
