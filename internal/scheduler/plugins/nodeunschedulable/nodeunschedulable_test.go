package nodeunschedulable

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
		node *v1.Node
		want string
	}{
		{"schedulable node", st.Pod("p").Obj(), st.Node("n").Obj(), ""},
		{"cordoned node", st.Pod("p").Obj(), st.Node("n").Unschedulable().Obj(), "UnschedulableAndUnresolvable: node(s) were unschedulable"},
		{"cordoned node, tolerated", st.Pod("p").Toleration(v1.TaintNodeUnschedulable, "", v1.TaintEffectNoSchedule).Obj(), st.Node("n").Unschedulable().Obj(), ""},
		{"cordoned node, other toleration", st.Pod("p").Toleration("x", "", v1.TaintEffectNoSchedule).Obj(), st.Node("n").Unschedulable().Obj(), "UnschedulableAndUnresolvable: node(s) were unschedulable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := st.Framework(t, Name, New, "")
			got := st.Reasons(st.Filter(t, f, tt.pod, framework.NewSnapshot(nil, []*v1.Node{tt.node})))["n"]
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
