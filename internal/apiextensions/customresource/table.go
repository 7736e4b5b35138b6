package customresource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"

	"plainkube.dev/plainkube/internal/registry"
)

var metadataDescriptions = metav1.ObjectMeta{}.SwaggerDoc()

// newTable is upstream's table convertor for custom resources: NAME, then
// the additionalPrinterColumns (AGE when there are none).
func newTable(columns []apiextensionsv1.CustomResourceColumnDefinition) (*registry.TableSpec, error) {
	if len(columns) == 0 {
		columns = []apiextensionsv1.CustomResourceColumnDefinition{{
			Name: "Age", Type: "date", Description: metadataDescriptions["creationTimestamp"], JSONPath: ".metadata.creationTimestamp",
		}}
	}
	spec := &registry.TableSpec{Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metadataDescriptions["name"]},
	}}
	var paths []*jsonpath.JSONPath
	for _, col := range columns {
		p := jsonpath.New(col.Name)
		if err := p.Parse(fmt.Sprintf("{%s}", col.JSONPath)); err != nil {
			return nil, fmt.Errorf("unrecognized column definition %q", col.JSONPath)
		}
		p.AllowMissingKeys(true)
		desc := fmt.Sprintf("Custom resource definition column (in JSONPath format): %s", col.JSONPath)
		if col.Description != "" {
			desc = col.Description
		}
		paths = append(paths, p)
		spec.Columns = append(spec.Columns, metav1.TableColumnDefinition{
			Name: col.Name, Type: col.Type, Format: col.Format, Description: desc, Priority: col.Priority,
		})
	}
	headers := spec.Columns[1:]
	spec.Cells = func(obj runtime.Object) []interface{} {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		cells := make([]interface{}, 1, 1+len(paths))
		cells[0] = u.GetName()
		var buf bytes.Buffer
		for i, p := range paths {
			results, err := p.FindResults(u.Object)
			if err != nil || len(results) == 0 || len(results[0]) == 0 {
				cells = append(cells, nil)
				continue
			}
			value := results[0][0].Interface()
			if headers[i].Type == "string" {
				if err := p.PrintResults(&buf, []reflect.Value{reflect.ValueOf(value)}); err == nil {
					cells = append(cells, buf.String())
				} else {
					cells = append(cells, nil)
				}
				buf.Reset()
				continue
			}
			cells = append(cells, cellForJSONValue(headers[i].Type, value))
		}
		return cells
	}
	return spec, nil
}

func cellForJSONValue(headerType string, value interface{}) interface{} {
	if value == nil {
		return nil
	}
	switch headerType {
	case "integer":
		switch v := value.(type) {
		case int64:
			return v
		case float64:
			return int64(v)
		case json.Number:
			if i, err := v.Int64(); err == nil {
				return i
			}
		}
	case "number":
		switch v := value.(type) {
		case int64:
			return float64(v)
		case float64:
			return v
		case json.Number:
			if f, err := v.Float64(); err == nil {
				return f
			}
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "string":
		if s, ok := value.(string); ok {
			return s
		}
	case "date":
		if s, ok := value.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			return metatable.ConvertToHumanReadableDateType(t)
		}
	}
	return nil
}

// selectableField is one of a version's selectableFields, compiled.
type selectableField struct {
	name string
	path *jsonpath.JSONPath
}

func prepareSelectableFields(sfs []apiextensionsv1.SelectableField) []selectableField {
	var out []selectableField
	for _, sf := range sfs {
		p := jsonpath.New("selectableField")
		p.AllowMissingKeys(true)
		if err := p.Parse("{" + sf.JSONPath + "}"); err != nil {
			continue // validation of the CRD refuses such paths
		}
		out = append(out, selectableField{name: strings.TrimPrefix(sf.JSONPath, "."), path: p})
	}
	return out
}

// fieldSet is the value of every selectable field of obj ("" when absent).
func (ver *version) fieldSet(obj runtime.Object) fields.Set {
	set := fields.Set{}
	u, _ := obj.(*unstructured.Unstructured)
	for _, sf := range ver.selectableFields {
		set[sf.name] = ""
		if u == nil {
			continue
		}
		results, err := sf.path.FindResults(u.Object)
		if err != nil || len(results) == 0 || len(results[0]) == 0 {
			continue
		}
		if v := results[0][0].Interface(); v != nil {
			set[sf.name] = fmt.Sprint(v)
		}
	}
	return set
}
