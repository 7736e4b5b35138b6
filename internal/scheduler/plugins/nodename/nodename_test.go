package nodename

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"no node name", st.Pod("p").Obj(), map[string]string{}},
		{"names n1", st.Pod("p").Node("n1").Obj(), map[string]string{"n2": "UnschedulableAndUnresolvable: " + ErrReason}},
	}
	snap := framework.NewSnapshot(nil, []*v1.Node{st.Node("n1").Obj(), st.Node("n2").Obj()})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := st.Reasons(st.Filter(t, st.Framework(t, Name, New, ""), tt.pod, snap))
			if len(got) != len(tt.want) || got["n2"] != tt.want["n2"] {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
