// Package registrytest holds what the registry packages' tests share:
// finding a resource by name and checking validation errors against
// upstream's messages.
package registrytest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

// Named returns the resource of resources whose plural is plural.
func Named(t testing.TB, resources []registry.Resource, plural string) registry.Resource {
	t.Helper()
	for _, r := range resources {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %s", plural)
	return registry.Resource{}
}

// ExpectErrorPrefixes checks that errs are as many as want and that each
// message starts with the matching want.
func ExpectErrorPrefixes(t testing.TB, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if len(got) != len(want) {
		t.Fatalf("%s: errors %q, want %q", what, got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("%s: error %d = %q, want prefix %q", what, i, got[i], want[i])
		}
	}
}
