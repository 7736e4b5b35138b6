package podtopologyspread

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

const zone = v1.LabelTopologyZone

func web(name, node string) *v1.Pod { return st.Pod(name).Label("app", "web").Node(node).Obj() }

func TestFilter(t *testing.T) {
	const (
		skew    = "Unschedulable: " + ErrReasonConstraintsNotMatch
		missing = "UnschedulableAndUnresolvable: " + ErrReasonNodeLabelNotMatch
	)
	nodes := []*v1.Node{
		st.Node("a1").Zone("a").Obj(), st.Node("a2").Zone("a").Obj(),
		st.Node("b1").Zone("b").Obj(),
		st.Node("c1").Zone("c").Taint("t", "", v1.TaintEffectNoSchedule).Obj(),
		st.Node("nozone").Obj(),
	}
	tests := []struct {
		name     string
		existing []*v1.Pod
		pod      *v1.Pod
		want     map[string]string
	}{
		{
			name:     "zone a is ahead",
			existing: []*v1.Pod{web("w1", "a1"), web("w2", "a2")},
			pod:      st.Pod("p").Label("app", "web").Spread(1, zone, v1.DoNotSchedule, "app", "web").Obj(),
			want:     map[string]string{"a1": skew, "a2": skew, "nozone": missing},
		},
		{
			name:     "maxSkew 2 allows one more in a",
			existing: []*v1.Pod{web("w1", "a1")},
			pod:      st.Pod("p").Label("app", "web").Spread(2, zone, v1.DoNotSchedule, "app", "web").Obj(),
			want:     map[string]string{"nozone": missing},
		},
		{
			name:     "tainted zone counts by default (nodeTaintsPolicy Ignore)",
			existing: []*v1.Pod{web("w1", "a1"), web("w2", "b1")},
			pod:      st.Pod("p").Label("app", "web").Spread(1, zone, v1.DoNotSchedule, "app", "web").Obj(),
			want:     map[string]string{"a1": skew, "a2": skew, "b1": skew, "nozone": missing},
		},
		{
			name:     "nodeTaintsPolicy Honor leaves the tainted zone out",
			existing: []*v1.Pod{web("w1", "a1"), web("w2", "b1")},
			pod:      st.Pod("p").Label("app", "web").Spread(1, zone, v1.DoNotSchedule, "app", "web").NodeTaintsPolicy(v1.NodeInclusionPolicyHonor).Obj(),
			want:     map[string]string{"nozone": missing},
		},
		{
			name:     "nodeAffinityPolicy Honor: only zones the pod may use count",
			existing: []*v1.Pod{web("w1", "a1")},
			pod:      st.Pod("p").Label("app", "web").NodeAffinityIn(zone, "a").Spread(1, zone, v1.DoNotSchedule, "app", "web").Obj(),
			want:     map[string]string{"nozone": missing},
		},
		{
			name:     "nodeAffinityPolicy Ignore: all zones count",
			existing: []*v1.Pod{web("w1", "a1")},
			pod:      st.Pod("p").Label("app", "web").NodeAffinityIn(zone, "a").Spread(1, zone, v1.DoNotSchedule, "app", "web").NodeAffinityPolicy(v1.NodeInclusionPolicyIgnore).Obj(),
			want:     map[string]string{"a1": skew, "a2": skew, "nozone": missing},
		},
		{
			name:     "minDomains above the number of zones: the minimum is 0",
			existing: []*v1.Pod{web("w1", "a1"), web("w2", "b1"), web("w3", "c1")},
			pod:      st.Pod("p").Label("app", "web").Spread(1, zone, v1.DoNotSchedule, "app", "web").MinDomains(4).Obj(),
			want:     map[string]string{"a1": skew, "a2": skew, "b1": skew, "c1": skew, "nozone": missing},
		},
		{
			name:     "ScheduleAnyway does not filter",
			existing: []*v1.Pod{web("w1", "a1"), web("w2", "a2")},
			pod:      st.Pod("p").Label("app", "web").Spread(1, zone, v1.ScheduleAnyway, "app", "web").Obj(),
			want:     map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := st.Reasons(st.Filter(t, st.Framework(t, Name, New, ""), tt.pod, framework.NewSnapshot(tt.existing, nodes)))
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

func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("a1").Zone("a").Obj(), st.Node("a2").Zone("a").Obj(),
		st.Node("b1").Zone("b").Obj(),
	}
	existing := []*v1.Pod{web("w1", "a1"), web("w2", "a2"), web("w3", "b1")}
	pod := st.Pod("p").Label("app", "web").Spread(1, zone, v1.ScheduleAnyway, "app", "web").Obj()
	got := st.Score(t, st.Framework(t, Name, New, ""), pod, framework.NewSnapshot(existing, nodes))
	// Zone a holds two matching pods, b one: b scores highest.
	if !(got["b1"] == 100 && got["a1"] < got["b1"] && got["a1"] == got["a2"]) {
		t.Errorf("got %v", got)
	}
}

type workloads struct{ svc []*v1.Service }

func (w workloads) Services(string) []*v1.Service { return w.svc }
func (w workloads) ControllerSelector(string, *metav1.OwnerReference) labels.Selector {
	return nil
}

func TestSystemDefaultSpreadsServicePods(t *testing.T) {
	nodes := []*v1.Node{st.Node("n1").Obj(), st.Node("n2").Obj()}
	existing := []*v1.Pod{web("w1", "n1"), web("w2", "n1")}
	snap := framework.NewSnapshot(existing, nodes)
	pod := st.Pod("p").Label("app", "web").Obj()
	f := st.Framework(t, Name, New, "")
	if got := st.Score(t, f, pod, snap); got["n1"] != got["n2"] {
		t.Errorf("without workloads: got %v, want no preference", got)
	}
	snap.Workloads = workloads{svc: []*v1.Service{{Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}}}}}
	if got := st.Score(t, f, pod, snap); got["n2"] <= got["n1"] {
		t.Errorf("with a service: got %v, want n2 preferred", got)
	}
}
