package imagelocality

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("has").Image("registry.example/big:1", 300).Image("registry.example/small", 10).Obj(),
		st.Node("hasnot").Obj(),
		st.Node("both").Image("registry.example/big:1", 300).Obj(),
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		// 300 MiB spread over 2 of 3 nodes: 200 MiB; (200-23)*100/(1000-23).
		{"big image", st.Pod("p").Image("registry.example/big:1").Obj(), map[string]int64{"has": 18, "hasnot": 0, "both": 18}},
		// Untagged names mean :latest; 10 MiB is under the 23 MiB threshold.
		{"small image", st.Pod("p").Image("registry.example/small:latest").Obj(), map[string]int64{"has": 0, "hasnot": 0, "both": 0}},
		{"absent image", st.Pod("p").Image("other").Obj(), map[string]int64{"has": 0, "hasnot": 0, "both": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := st.Score(t, st.Framework(t, Name, New, ""), tt.pod, framework.NewSnapshot(nil, nodes))
			for n, w := range tt.want {
				if got[n] != w {
					t.Errorf("%s: got %d, want %d", n, got[n], w)
				}
			}
		})
	}
}
