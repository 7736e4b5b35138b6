package framework_test

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/config"
	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
	"plainkube.dev/plainkube/internal/scheduler/plugins"
)

func TestFitErrorMessage(t *testing.T) {
	pod := st.Pod("p").Obj()
	tests := []struct {
		name string
		err  framework.FitError
		want string
	}{
		{
			name: "reasons counted and sorted as strings",
			err: framework.FitError{Pod: pod, NumAllNodes: 3, Diagnosis: framework.Diagnosis{NodeToStatus: framework.NewNodeToStatus(map[string]*framework.Status{
				"a": framework.NewStatus(framework.Unschedulable, "Insufficient cpu", "Insufficient memory"),
				"b": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
				"c": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
			}, nil)}},
			want: "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu.",
		},
		{
			name: "absent nodes take the absent status",
			err: framework.FitError{Pod: pod, NumAllNodes: 5, Diagnosis: framework.Diagnosis{NodeToStatus: framework.NewNodeToStatus(map[string]*framework.Status{
				"a": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
			}, framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector"))}},
			want: "0/5 nodes are available: 1 Insufficient cpu, 4 node(s) didn't match Pod's node affinity/selector.",
		},
		{
			name: "prefilter message replaces the per-node reasons",
			err: framework.FitError{Pod: pod, NumAllNodes: 2, Diagnosis: framework.Diagnosis{
				NodeToStatus: framework.NewNodeToStatus(nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, `persistentvolumeclaim "data" not found`)),
				PreFilterMsg: `persistentvolumeclaim "data" not found`,
			}},
			want: `0/2 nodes are available: persistentvolumeclaim "data" not found.`,
		},
		{
			name: "preemption message appended as upstream does",
			err: framework.FitError{Pod: pod, NumAllNodes: 1, Diagnosis: framework.Diagnosis{
				NodeToStatus:  framework.NewNodeToStatus(map[string]*framework.Status{"a": framework.NewStatus(framework.Unschedulable, "Insufficient cpu")}, nil),
				PostFilterMsg: "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
			}},
			want: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod..",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	var nilStatus *framework.Status
	if !nilStatus.IsSuccess() || nilStatus.Code() != framework.Success || nilStatus.AsError() != nil {
		t.Error("nil status is not success")
	}
	s := framework.NewStatus(framework.Unschedulable, "a", "b").WithPlugin("P")
	if !s.IsRejected() || s.Message() != "a, b" || s.Plugin() != "P" || s.AsError().Error() != "a, b" {
		t.Errorf("got %v", s)
	}
	if framework.NewStatus(framework.Skip).AsError() != nil {
		t.Error("skip is an error")
	}
}

func TestNodeInfo(t *testing.T) {
	ni := framework.NewNodeInfo()
	ni.SetNode(st.Node("n").Capacity("4", "8Gi").Obj())
	a := st.Pod("a").Req("1", "1Gi").HostPort(80, v1.ProtocolTCP, "").PVC("data").Obj()
	b := st.Pod("b").Label("x", "y").PodAntiAffinity(v1.LabelHostname, "x", "y").Obj()
	ni.AddPod(a)
	ni.AddPod(b)
	if ni.Requested.MilliCPU != 1000 || ni.NonZeroRequested.MilliCPU != 1100 || ni.NonZeroRequested.Memory != 1<<30+framework.DefaultMemoryRequest {
		t.Errorf("requested %+v, non-zero %+v", ni.Requested, ni.NonZeroRequested)
	}
	if !ni.UsedPorts.CheckConflict("", "TCP", 80) || len(ni.PodsWithAffinity) != 1 || len(ni.PodsWithRequiredAntiAffinity) != 1 || ni.PVCRefCounts["default/data"] != 1 {
		t.Errorf("aggregates wrong: %+v", ni)
	}
	c := ni.Clone()
	if err := c.RemovePod(a); err != nil {
		t.Fatal(err)
	}
	if err := c.RemovePod(a); err == nil {
		t.Error("removed twice")
	}
	if c.Requested.MilliCPU != 0 || c.UsedPorts.CheckConflict("", "TCP", 80) || len(c.PVCRefCounts) != 0 {
		t.Errorf("clone after removal: %+v", c)
	}
	if ni.Requested.MilliCPU != 1000 || len(ni.Pods) != 2 || !ni.UsedPorts.CheckConflict("", "TCP", 80) {
		t.Error("removing from the clone changed the original")
	}
}

func TestNewFrameworkFromConfig(t *testing.T) {
	c, err := config.Parse([]byte(`
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled: [{name: ImageLocality}]
      enabled: [{name: NodeAffinity, weight: 7}]
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
    filter:
      disabled: [{name: NodePorts}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
`))
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.NewFramework(plugins.NewRegistry(), &c.Profiles[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := f.ScorePluginNames(); slices.Contains(got, "ImageLocality") || slices.Contains(got, "NodeResourcesBalancedAllocation") || len(got) != 5 {
		t.Errorf("score plugins %v", got)
	}
	if got := f.FilterPluginNames(); slices.Contains(got, "NodePorts") || got[0] != "NodeUnschedulable" {
		t.Errorf("filter plugins %v", got)
	}
	for name, want := range map[string]int64{"NodeAffinity": 7, "TaintToleration": 3, "NodeResourcesFit": 1, "PodTopologySpread": 2} {
		if got := f.ScoreWeight(name); got != want {
			t.Errorf("%s weight %d, want %d", name, got, want)
		}
	}
	// MostAllocated: the fuller node scores higher.
	snap := framework.NewSnapshot([]*v1.Pod{st.Pod("e").Req("2", "").Node("full").Obj()},
		[]*v1.Node{st.Node("full").Capacity("4", "4Gi").Obj(), st.Node("empty").Capacity("4", "4Gi").Obj()})
	scores := st.Score(t, f, st.Pod("p").Req("1", "").Obj(), snap)
	if scores["full"] <= scores["empty"] {
		t.Errorf("scores %v", scores)
	}
}

func TestNewFrameworkErrors(t *testing.T) {
	reg := plugins.NewRegistry()
	for name, p := range map[string]*config.Profile{
		"unknown plugin": {SchedulerName: "x", Plugins: &config.Plugins{MultiPoint: config.PluginSet{Enabled: []config.Plugin{{Name: "Nope"}}}}},
		"wrong point":    {SchedulerName: "x", Plugins: &config.Plugins{Filter: config.PluginSet{Enabled: []config.Plugin{{Name: "ImageLocality"}}}}},
		"bad args":       {SchedulerName: "x", Plugins: &config.Plugins{MultiPoint: config.PluginSet{Enabled: []config.Plugin{{Name: "NodeResourcesFit"}}}}, PluginConfig: []config.PluginConfig{{Name: "NodeResourcesFit", Args: []byte(`{"scoringStrategy":{"type":"X"}}`)}}},
	} {
		if _, err := framework.NewFramework(reg, p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestDefaultNormalizeScore(t *testing.T) {
	s := []framework.NodeScore{{Name: "a", Score: 2}, {Name: "b", Score: 4}, {Name: "c", Score: 0}}
	framework.DefaultNormalizeScore(100, false, s)
	if s[0].Score != 50 || s[1].Score != 100 || s[2].Score != 0 {
		t.Errorf("got %v", s)
	}
	r := []framework.NodeScore{{Name: "a", Score: 0}, {Name: "b", Score: 0}}
	framework.DefaultNormalizeScore(100, true, r)
	if r[0].Score != 100 || r[1].Score != 100 {
		t.Errorf("reverse of zeros: %v", r)
	}
}

// TestPluginObserver: one cycle in ten has its plugins timed, the first
// among them; Filter is reported per node, with the status it returned.
func TestPluginObserver(t *testing.T) {
	type run struct{ plugin, point, code string }
	var runs []run
	f, err := framework.NewFramework(plugins.NewRegistry(), nil, framework.WithPluginObserver(
		func(plugin, point string, code framework.Code, _ time.Duration) {
			runs = append(runs, run{plugin, point, code.String()})
		}))
	if err != nil {
		t.Fatal(err)
	}
	snap := framework.NewSnapshot(nil, []*v1.Node{st.Node("small").Capacity("1", "1Gi").Obj(), st.Node("big").Capacity("8", "8Gi").Obj()})
	pod := st.Pod("p").Req("2", "").Obj()
	sampled := 0
	for range 20 {
		state := framework.NewCycleState()
		f.SampleCycle(state)
		if state.RecordPluginMetrics {
			sampled++
		}
		f.SetSnapshot(snap)
		if _, s := f.RunPreFilterPlugins(context.Background(), state, pod); !s.IsSuccess() {
			t.Fatal(s)
		}
		for _, ni := range snap.List() {
			f.RunFilterPlugins(context.Background(), state, pod, ni)
		}
	}
	if sampled != 2 {
		t.Errorf("%d of 20 cycles sampled, want 2", sampled)
	}
	count := map[run]int{}
	for _, r := range runs {
		count[r]++
	}
	// Two sampled cycles, NodeResourcesFit filtering two nodes each: the
	// small one refused, the big one passed.
	if got := count[run{"NodeResourcesFit", "Filter", "Unschedulable"}]; got != 2 {
		t.Errorf("NodeResourcesFit Filter Unschedulable reported %d times, want 2 (runs %v)", got, runs)
	}
	if got := count[run{"NodeResourcesFit", "Filter", "Success"}]; got != 2 {
		t.Errorf("NodeResourcesFit Filter Success reported %d times, want 2", got)
	}
	if got := count[run{"NodeResourcesFit", "PreFilter", "Success"}]; got != 2 {
		t.Errorf("NodeResourcesFit PreFilter reported %d times, want 2", got)
	}
}
