package openapi

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/google/gnostic-models/compiler"
	"go.yaml.in/yaml/v3"
)

// gnostic's parsers (openapi_v2.ParseDocument and the v3 one) read their
// input with a YAML parser, which takes most of the time of turning a
// large document into protobuf. Our documents are JSON, so yamlNode builds
// the same node tree straight from JSON tokens, several times faster, and
// hands it to gnostic's NewDocument.

// yamlNode decodes one JSON document into a yaml.Node tree. Object keys
// come out sorted, as our encoder writes them.
func yamlNode(data []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return toYAMLNode(v), nil
}

func toYAMLNode(v any) *yaml.Node {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: make([]*yaml.Node, 0, 2*len(keys))}
		for _, k := range keys {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, toYAMLNode(t[k]))
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: make([]*yaml.Node, 0, len(t))}
		for _, e := range t {
			n.Content = append(n.Content, toYAMLNode(e))
		}
		return n
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(string(t), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(t)}
	case bool:
		if t {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}

func gnosticContext(root *yaml.Node) *compiler.Context {
	return compiler.NewContextWithExtensions("$root", root, nil, nil)
}
