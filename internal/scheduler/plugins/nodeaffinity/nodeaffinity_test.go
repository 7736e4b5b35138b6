package nodeaffinity

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

func TestFilter(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("a").Label("disk", "ssd").Zone("z1").Obj(),
		st.Node("b").Label("disk", "hdd").Zone("z2").Obj(),
		st.Node("c").Zone("z3").Obj(),
	}
	snap := framework.NewSnapshot(nil, nodes)
	const no = "UnschedulableAndUnresolvable: " + ErrReasonPod
	byName := st.Pod("p").Obj()
	byName.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"b"}}}}},
	}}}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"no constraints", st.Pod("p").Obj(), map[string]string{}},
		{"nodeSelector", st.Pod("p").NodeSelector("disk", "ssd").Obj(), map[string]string{"b": no, "c": no}},
		{"required affinity In", st.Pod("p").NodeAffinityIn(v1.LabelTopologyZone, "z2", "z3").Obj(), map[string]string{"a": no}},
		{"selector and affinity both apply", st.Pod("p").NodeSelector("disk", "hdd").NodeAffinityIn(v1.LabelTopologyZone, "z1", "z3").Obj(), map[string]string{"a": no, "b": no, "c": no}},
		{"metadata.name field", byName, map[string]string{"a": no, "c": no}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := st.Reasons(st.Filter(t, st.Framework(t, Name, New, ""), tt.pod, snap))
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for n, w := range tt.want {
				if got[n] != w {
					t.Errorf("%s: got %q, want %q", n, got[n], w)
				}
			}
		})
	}
}

func TestPreFilterNodeNames(t *testing.T) {
	pod := st.Pod("p").Obj()
	pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"b", "c"}}}}},
	}}}
	pl := &NodeAffinity{}
	r, s := pl.PreFilter(t.Context(), framework.NewCycleState(), pod, nil)
	if !s.IsSuccess() || r.AllNodes() || r.NodeNames.Len() != 2 || !r.NodeNames.Has("b") {
		t.Fatalf("got %v %v", r, s)
	}
	if _, s := pl.PreFilter(t.Context(), framework.NewCycleState(), st.Pod("q").Obj(), nil); !s.IsSkip() {
		t.Errorf("pod without node constraints: got %v, want Skip", s)
	}
}

func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("a").Label("disk", "ssd").Zone("z1").Obj(),
		st.Node("b").Label("disk", "hdd").Zone("z1").Obj(),
		st.Node("c").Zone("z2").Obj(),
	}
	snap := framework.NewSnapshot(nil, nodes)
	pod := st.Pod("p").PreferNode(2, "disk", "ssd").PreferNode(5, v1.LabelTopologyZone, "z1").Obj()
	got := st.Score(t, st.Framework(t, Name, New, ""), pod, snap)
	// Raw sums 7, 5, 0, normalized by the maximum.
	want := map[string]int64{"a": 100, "b": 71, "c": 0}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: got %d, want %d", n, got[n], w)
		}
	}
}
