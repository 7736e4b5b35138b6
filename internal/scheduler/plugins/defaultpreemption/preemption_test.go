package defaultpreemption_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
	"plainkube.dev/plainkube/internal/scheduler/plugins"
)

// postFilter filters every node with the default plugins and runs
// preemption on the result.
func postFilter(t *testing.T, snap *framework.Snapshot, pod *v1.Pod) (*framework.PostFilterResult, *framework.Status) {
	t.Helper()
	f, err := framework.NewFramework(plugins.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f.SetSnapshot(snap)
	state := framework.NewCycleState()
	m := framework.NewDefaultNodeToStatus()
	if _, s := f.RunPreFilterPlugins(ctx, state, pod); !s.IsSuccess() {
		m.SetAbsentNodesStatus(s)
	} else {
		for _, ni := range snap.List() {
			s := f.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
			if s.IsSuccess() {
				t.Fatalf("pod fits on %s", ni.Node().Name)
			}
			m.Set(ni.Node().Name, s)
		}
	}
	return f.RunPostFilterPlugins(ctx, state, pod, m)
}

func victimNames(r *framework.PostFilterResult) []string {
	var out []string
	for _, v := range r.Victims {
		out = append(out, v.Name)
	}
	return out
}

func TestPreemption(t *testing.T) {
	small := func(name string) *v1.Node { return st.Node(name).Capacity("2", "8Gi").Obj() }
	at := func(s int) time.Time { return st.Base.Add(time.Duration(s) * time.Hour) }
	tests := []struct {
		name        string
		nodes       []*v1.Node
		pods        []*v1.Pod
		pdbs        []*policyv1.PodDisruptionBudget
		pod         *v1.Pod
		wantNode    string
		wantVictims []string
		wantMsg     string
	}{
		{
			name:        "fewest and least important victims",
			nodes:       []*v1.Node{small("n1")},
			pods:        []*v1.Pod{st.Pod("a").Priority(1).Req("1", "").Node("n1").Obj(), st.Pod("b").Priority(2).Req("1", "").Node("n1").Obj()},
			pod:         st.Pod("p").Priority(10).Req("1", "").Obj(),
			wantNode:    "n1",
			wantVictims: []string{"a"},
		},
		{
			name:        "all lower pods when needed, most important first",
			nodes:       []*v1.Node{small("n1")},
			pods:        []*v1.Pod{st.Pod("a").Priority(1).Req("1", "").Node("n1").Obj(), st.Pod("b").Priority(2).Req("1", "").Node("n1").Obj()},
			pod:         st.Pod("p").Priority(10).Req("2", "").Obj(),
			wantNode:    "n1",
			wantVictims: []string{"b", "a"},
		},
		{
			name:     "higher-priority pods are never victims",
			nodes:    []*v1.Node{small("n1")},
			pods:     []*v1.Pod{st.Pod("a").Priority(1).Req("1", "").Node("n1").Obj(), st.Pod("b").Priority(20).Req("1", "").Node("n1").Obj()},
			pod:      st.Pod("p").Priority(10).Req("2", "").Obj(),
			wantMsg:  "preemption: 0/1 nodes are available: 1 Insufficient cpu.",
			wantNode: "",
		},
		{
			name:        "node with fewer victims",
			nodes:       []*v1.Node{small("n1"), small("n2")},
			pods:        []*v1.Pod{st.Pod("a").Priority(1).Req("1", "").Node("n1").Obj(), st.Pod("b").Priority(1).Req("1", "").Node("n1").Obj(), st.Pod("c").Priority(1).Req("2", "").Node("n2").Obj()},
			pod:         st.Pod("p").Priority(10).Req("2", "").Obj(),
			wantNode:    "n2",
			wantVictims: []string{"c"},
		},
		{
			name:  "node whose highest victim started latest",
			nodes: []*v1.Node{small("n1"), small("n2")},
			pods: []*v1.Pod{
				st.Pod("old").Priority(1).Req("2", "").StartTime(at(1)).Node("n1").Obj(),
				st.Pod("new").Priority(1).Req("2", "").StartTime(at(2)).Node("n2").Obj(),
			},
			pod:         st.Pod("p").Priority(10).Req("2", "").Obj(),
			wantNode:    "n2",
			wantVictims: []string{"new"},
		},
		{
			name:  "PDB: prefer the node without violations",
			nodes: []*v1.Node{small("n1"), small("n2")},
			pods: []*v1.Pod{
				st.Pod("guarded").Label("app", "db").Priority(1).Req("2", "").Node("n1").Obj(),
				st.Pod("free").Priority(5).Req("2", "").Node("n2").Obj(),
			},
			pdbs: []*policyv1.PodDisruptionBudget{{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
				Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
			}},
			pod:         st.Pod("p").Priority(10).Req("2", "").Obj(),
			wantNode:    "n2",
			wantVictims: []string{"free"},
		},
		{
			name:  "PDB: violated when there is no other way",
			nodes: []*v1.Node{small("n1")},
			pods:  []*v1.Pod{st.Pod("guarded").Label("app", "db").Priority(1).Req("2", "").Node("n1").Obj()},
			pdbs: []*policyv1.PodDisruptionBudget{{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
				Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
			}},
			pod:         st.Pod("p").Priority(10).Req("2", "").Obj(),
			wantNode:    "n1",
			wantVictims: []string{"guarded"},
		},
		{
			name:     "unresolvable nodes are not tried",
			nodes:    []*v1.Node{st.Node("n1").Capacity("2", "8Gi").Taint("t", "", v1.TaintEffectNoSchedule).Obj()},
			pods:     []*v1.Pod{st.Pod("a").Priority(1).Req("2", "").Node("n1").Obj()},
			pod:      st.Pod("p").Priority(10).Req("2", "").Obj(),
			wantMsg:  "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
			wantNode: "",
		},
		{
			name:    "preemptionPolicy Never",
			nodes:   []*v1.Node{small("n1")},
			pods:    []*v1.Pod{st.Pod("a").Priority(1).Req("2", "").Node("n1").Obj()},
			pod:     st.Pod("p").Priority(10).Req("2", "").PreemptNever().Obj(),
			wantMsg: "preemption: not eligible due to preemptionPolicy=Never.",
		},
		{
			name:        "anti-affinity resolved by evicting the repelling pod",
			nodes:       []*v1.Node{small("n1")},
			pods:        []*v1.Pod{st.Pod("a").Label("app", "x").Priority(1).Node("n1").Obj()},
			pod:         st.Pod("p").Priority(10).PodAntiAffinity(v1.LabelHostname, "app", "x").Obj(),
			wantNode:    "n1",
			wantVictims: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := framework.NewSnapshot(tt.pods, tt.nodes)
			snap.PDBs = tt.pdbs
			r, s := postFilter(t, snap, tt.pod)
			if s.Message() != tt.wantMsg {
				t.Errorf("message %q, want %q", s.Message(), tt.wantMsg)
			}
			if tt.wantNode == "" {
				if r != nil && r.NominatedNodeName != "" {
					t.Errorf("nominated %s", r.NominatedNodeName)
				}
				return
			}
			if r == nil || r.NominatedNodeName != tt.wantNode {
				t.Fatalf("got %+v, want node %s", r, tt.wantNode)
			}
			got := victimNames(r)
			if len(got) != len(tt.wantVictims) {
				t.Fatalf("victims %v, want %v", got, tt.wantVictims)
			}
			for i := range got {
				if got[i] != tt.wantVictims[i] {
					t.Errorf("victims %v, want %v", got, tt.wantVictims)
				}
			}
		})
	}
}

func TestClearsLowerNominations(t *testing.T) {
	snap := framework.NewSnapshot([]*v1.Pod{st.Pod("a").Priority(1).Req("2", "").Node("n1").Obj()}, []*v1.Node{st.Node("n1").Capacity("2", "8Gi").Obj()})
	lower := st.Pod("lower").Priority(5).NominatedNode("n1").Obj()
	snap.NominatedPods = map[string][]*framework.PodInfo{"n1": {framework.NewPodInfo(lower)}}
	r, s := postFilter(t, snap, st.Pod("p").Priority(10).Req("2", "").Obj())
	if !s.IsSuccess() || r.NominatedNodeName != "n1" || len(r.ClearNominated) != 1 || r.ClearNominated[0].Name != "lower" {
		t.Fatalf("got %+v %v", r, s)
	}
}
