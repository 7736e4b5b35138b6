package coordination

import (
	"fmt"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func expectErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%s: %s: %s", e.Field, e.Type, e.Detail))
	}
	if len(got) != len(want) {
		t.Fatalf("got errors %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestLeaseValidate(t *testing.T) {
	res := Resources()[0]
	if res.Plural != "leases" || !res.Namespaced || res.TracksGeneration || res.Kind.Group != "coordination.k8s.io" {
		t.Fatalf("resource = %+v", res)
	}
	tests := []struct {
		name string
		spec coordinationv1.LeaseSpec
		want []string
	}{
		{name: "empty", spec: coordinationv1.LeaseSpec{}},
		{name: "heartbeat", spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("node-1"), LeaseDurationSeconds: ptr(int32(40)), LeaseTransitions: ptr(int32(0))}},
		{
			name: "zero duration",
			spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr(int32(0))},
			want: []string{"spec.leaseDurationSeconds: Invalid value: must be greater than 0"},
		},
		{
			name: "negative transitions",
			spec: coordinationv1.LeaseSpec{LeaseTransitions: ptr(int32(-1))},
			want: []string{"spec.leaseTransitions: Invalid value: must be greater than or equal to 0"},
		},
		{
			name: "preferred holder without strategy",
			spec: coordinationv1.LeaseSpec{PreferredHolder: ptr("a")},
			want: []string{"spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"},
		},
		{
			name: "known strategy",
			spec: coordinationv1.LeaseSpec{Strategy: ptr(coordinationv1.OldestEmulationVersion), PreferredHolder: ptr("a")},
		},
		{name: "custom strategy", spec: coordinationv1.LeaseSpec{Strategy: ptr(coordinationv1.CoordinatedLeaseStrategy("example.com/mine"))}},
		{
			name: "unknown strategy",
			spec: coordinationv1.LeaseSpec{Strategy: ptr(coordinationv1.CoordinatedLeaseStrategy("Newest"))},
			want: []string{`spec.strategy.strategy: Unsupported value: supported values: "OldestEmulationVersion"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &coordinationv1.Lease{Spec: tc.spec}
			expectErrors(t, res.Strategy.Validate(l), tc.want...)
		})
	}
}
