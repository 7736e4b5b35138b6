package all

import (
	"slices"
	"testing"
)

// TestScaleDeclared: a resource that serves a scale subresource says how
// its Scale maps onto its objects, and only such a resource does.
func TestScaleDeclared(t *testing.T) {
	n := 0
	for _, r := range Resources() {
		hasScale := slices.Contains(r.Subresources, "scale")
		if hasScale != (r.Scale != nil) {
			t.Errorf("%s: scale subresource %v, registry.Scale set %v", r.Kind, hasScale, r.Scale != nil)
		}
		if hasScale {
			n++
		}
	}
	if n < 4 {
		t.Errorf("%d resources serve scale; want at least deployments, replicasets, statefulsets and replicationcontrollers", n)
	}
}
