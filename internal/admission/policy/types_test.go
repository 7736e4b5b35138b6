package policy

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestBuiltinTypes: given the built-in kinds' schemas, a mutating policy
// has a Deployment's at once, before the OpenAPI of the server has been
// read (conformance's "should mutate a Deployment with annotations" wrote
// one right after making its policy); a custom kind still waits for it;
// the schemas are built only when first asked for.
func TestBuiltinTypes(t *testing.T) {
	built := 0
	types := patch.NewTypeConverterManager(lazyTypes(func() managedfields.TypeConverter {
		built++
		return applyconfigurations.NewTypeConverter(scheme.Scheme)
	}), nil)
	if built != 0 {
		t.Fatalf("schemas built %d times before any use", built)
	}
	if tc := types.GetTypeConverter(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}); tc == nil {
		t.Error("no schema for apps/v1 Deployment")
	}
	if tc := types.GetTypeConverter(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}); tc != nil {
		t.Error("a schema for a kind nobody serves")
	}
	if built != 1 {
		t.Errorf("schemas built %d times, want once", built)
	}
	if lazyTypes(nil) != nil {
		t.Error("lazyTypes(nil) is not nil: the manager would call a nil function")
	}
}
