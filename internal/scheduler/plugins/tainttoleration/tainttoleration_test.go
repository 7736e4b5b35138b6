package tainttoleration

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
		{"no taints", st.Pod("p").Obj(), st.Node("n").Obj(), ""},
		{"control plane", st.Pod("p").Obj(), st.Node("n").Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj(),
			"UnschedulableAndUnresolvable: node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"},
		{"key and value", st.Pod("p").Obj(), st.Node("n").Taint("dedicated", "gpu", v1.TaintEffectNoExecute).Obj(),
			"UnschedulableAndUnresolvable: node(s) had untolerated taint {dedicated: gpu}"},
		{"tolerated by Equal", st.Pod("p").Toleration("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(), st.Node("n").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(), ""},
		{"wrong value", st.Pod("p").Toleration("dedicated", "db", v1.TaintEffectNoSchedule).Obj(), st.Node("n").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			"UnschedulableAndUnresolvable: node(s) had untolerated taint {dedicated: gpu}"},
		{"tolerated by Exists, any effect", st.Pod("p").Toleration("dedicated", "", "").Obj(), st.Node("n").Taint("dedicated", "gpu", v1.TaintEffectNoExecute).Obj(), ""},
		{"PreferNoSchedule does not filter", st.Pod("p").Obj(), st.Node("n").Taint("soft", "", v1.TaintEffectPreferNoSchedule).Obj(), ""},
		{"first untolerated taint is named", st.Pod("p").Toleration("a", "", v1.TaintEffectNoSchedule).Obj(),
			st.Node("n").Taint("a", "1", v1.TaintEffectNoSchedule).Taint("b", "2", v1.TaintEffectNoSchedule).Obj(),
			"UnschedulableAndUnresolvable: node(s) had untolerated taint {b: 2}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := st.Reasons(st.Filter(t, st.Framework(t, Name, New, ""), tt.pod, framework.NewSnapshot(nil, []*v1.Node{tt.node})))["n"]
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("clean").Obj(),
		st.Node("one").Taint("a", "", v1.TaintEffectPreferNoSchedule).Obj(),
		st.Node("two").Taint("a", "", v1.TaintEffectPreferNoSchedule).Taint("b", "", v1.TaintEffectPreferNoSchedule).Obj(),
	}
	snap := framework.NewSnapshot(nil, nodes)
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		{"fewer intolerable taints score higher", st.Pod("p").Obj(), map[string]int64{"clean": 100, "one": 50, "two": 0}},
		{"tolerating a", st.Pod("p").Toleration("a", "", v1.TaintEffectPreferNoSchedule).Obj(), map[string]int64{"clean": 100, "one": 100, "two": 0}},
		{"NoSchedule toleration does not count", st.Pod("p").Toleration("a", "", v1.TaintEffectNoSchedule).Obj(), map[string]int64{"clean": 100, "one": 50, "two": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := st.Score(t, st.Framework(t, Name, New, ""), tt.pod, snap)
			for n, w := range tt.want {
				if got[n] != w {
					t.Errorf("%s: got %d, want %d (all %v)", n, got[n], w, got)
				}
			}
		})
	}
}
