package openapi

import (
	"reflect"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kopenapiutil "k8s.io/kube-openapi/pkg/util"
)

// modelNamer is implemented by the generated k8s.io/api and apimachinery
// types (zz_generated.model_name.go): it returns upstream's definition name.
type modelNamer interface{ OpenAPIModelName() string }

// definitionName is the OpenAPI definition name of a named Go type:
// k8s.io/api/core/v1.Pod becomes io.k8s.api.core.v1.Pod. Types that name
// themselves (OpenAPIModelName) are trusted; others get the name derived
// from their package path the way upstream derives it.
func definitionName(t reflect.Type) string {
	if n, ok := zeroValue(t).(modelNamer); ok {
		if name := n.OpenAPIModelName(); name != "" {
			return name
		}
	}
	return kopenapiutil.ToRESTFriendlyName(t.PkgPath() + "." + t.Name())
}

// customDefinitionName names a kind that has no Go type (a custom resource):
// group example.com, version v1, kind Widget → com.example.v1.Widget.
func customDefinitionName(gvk schema.GroupVersionKind) string {
	parts := strings.Split(gvk.Group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + "." + gvk.Version + "." + gvk.Kind
}

// zeroValue returns the zero value of t as an interface, so that methods
// with value receivers (SwaggerDoc, OpenAPIModelName, ...) can be called.
func zeroValue(t reflect.Type) any {
	return reflect.Zero(t).Interface()
}

// groupCamel turns an API group into the word upstream puts in operation
// IDs: "" → Core, apps → Apps, rbac.authorization.k8s.io →
// RbacAuthorization, example.com → ExampleCom.
func groupCamel(group string) string {
	if group == "" {
		return "Core"
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	var b strings.Builder
	for _, part := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(upperFirst(part))
	}
	return b.String()
}

// tagName is the operation tag upstream uses: core_v1, apps_v1,
// rbacAuthorization_v1.
func tagName(gv schema.GroupVersion) string {
	return lowerFirst(groupCamel(gv.Group)) + "_" + gv.Version
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

// gvPath is the discovery key of a group version in /openapi/v3:
// api/v1 for the core group, apis/<group>/<version> otherwise.
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}
