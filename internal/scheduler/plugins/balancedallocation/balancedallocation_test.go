package balancedallocation

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

// Values from upstream's BalancedAllocation tests.
func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("n1").Res(v1.ResourceCPU, "4000m").Res(v1.ResourceMemory, "10000").Obj(),
		st.Node("n2").Res(v1.ResourceCPU, "6000m").Res(v1.ResourceMemory, "10000").Obj(),
	}
	tests := []struct {
		name     string
		existing []*v1.Pod
		pod      *v1.Pod
		want     map[string]int64
	}{
		{"differently sized nodes", nil, st.Pod("p").Req("3000m", "5000").Obj(), map[string]int64{"n1": 87, "n2": 100}},
		{"with existing pods", []*v1.Pod{st.Pod("e").Req("3000m", "0").Node("n2").Obj()}, st.Pod("p").Req("0", "5000").Obj(), map[string]int64{"n1": 75, "n2": 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := st.Score(t, st.Framework(t, Name, New, ""), tt.pod, framework.NewSnapshot(tt.existing, nodes))
			for n, w := range tt.want {
				if got[n] != w {
					t.Errorf("%s: got %d, want %d", n, got[n], w)
				}
			}
		})
	}
}

func TestSkipsBestEffort(t *testing.T) {
	f := st.Framework(t, Name, New, "")
	b := f.Plugin(Name).(*BalancedAllocation)
	if s := b.PreScore(t.Context(), framework.NewCycleState(), st.Pod("p").Obj(), nil); !s.IsSkip() {
		t.Errorf("got %v, want Skip", s)
	}
}
