package noderesourcesfit

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

const gpu v1.ResourceName = "example.com/gpu"

func TestFilter(t *testing.T) {
	node := func() *v1.Node {
		return st.Node("n").Capacity("4", "8Gi").Res(gpu, "1").Res(v1.ResourcePods, "3").Obj()
	}
	used := st.Pod("used").Req("3", "2Gi").Node("n").Obj()
	tests := []struct {
		name     string
		existing []*v1.Pod
		pod      *v1.Pod
		args     string
		want     string
	}{
		{"fits", []*v1.Pod{used}, st.Pod("p").Req("1", "6Gi").Obj(), "", ""},
		{"insufficient cpu", []*v1.Pod{used}, st.Pod("p").Req("1500m", "1Gi").Obj(), "", "Unschedulable: Insufficient cpu"},
		{"insufficient cpu and memory", []*v1.Pod{used}, st.Pod("p").Req("2", "7Gi").Obj(), "", "Unschedulable: Insufficient cpu, Insufficient memory"},
		{"extended resource", nil, st.Pod("p").ReqRes(gpu, "2").Obj(), "", "Unschedulable: Insufficient example.com/gpu"},
		{"ignored extended resource", nil, st.Pod("p").ReqRes(gpu, "2").Obj(), `{"ignoredResources":["example.com/gpu"]}`, ""},
		{"ignored resource group", nil, st.Pod("p").ReqRes(gpu, "2").Obj(), `{"ignoredResourceGroups":["example.com"]}`, ""},
		{"too many pods", []*v1.Pod{st.Pod("a").Node("n").Obj(), st.Pod("b").Node("n").Obj(), st.Pod("c").Node("n").Obj()}, st.Pod("p").Obj(), "", "Unschedulable: Too many pods"},
		{"too many pods and cpu", []*v1.Pod{used, st.Pod("b").Node("n").Obj(), st.Pod("c").Node("n").Obj()}, st.Pod("p").Req("2", "").Obj(), "", "Unschedulable: Too many pods, Insufficient cpu"},
		// Init containers run one at a time before the containers: the
		// request is the larger of the biggest init container and the sum.
		{"init container larger than containers", []*v1.Pod{used}, st.Pod("p").Req("500m", "").InitReq("2", "").Obj(), "", "Unschedulable: Insufficient cpu"},
		{"init container smaller than containers", []*v1.Pod{used}, st.Pod("p").Req("1", "").InitReq("1", "").Obj(), "", ""},
		{"overhead counts", []*v1.Pod{used}, st.Pod("p").Req("1", "").Overhead("100m", "0").Obj(), "", "Unschedulable: Insufficient cpu"},
		{"best effort pod on full node", []*v1.Pod{st.Pod("full").Req("4", "8Gi").Node("n").Obj()}, st.Pod("p").Obj(), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := framework.NewSnapshot(tt.existing, []*v1.Node{node()})
			got := st.Reasons(st.Filter(t, st.Framework(t, Name, New, tt.args), tt.pod, snap))["n"]
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSidecarCountsWithContainers(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := st.Pod("p").Req("1", "").InitReq("1", "").Obj()
	pod.Spec.InitContainers[0].RestartPolicy = &always // a sidecar runs alongside
	snap := framework.NewSnapshot([]*v1.Pod{st.Pod("u").Req("2500m", "").Node("n").Obj()}, []*v1.Node{st.Node("n").Capacity("4", "1Gi").Obj()})
	if got := st.Reasons(st.Filter(t, st.Framework(t, Name, New, ""), pod, snap))["n"]; got != "Unschedulable: Insufficient cpu" {
		t.Errorf("got %q", got)
	}
}

// Values from upstream's LeastAllocated and MostAllocated tests.
func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("n1").Res(v1.ResourceCPU, "4000m").Res(v1.ResourceMemory, "10000").Obj(),
		st.Node("n2").Res(v1.ResourceCPU, "6000m").Res(v1.ResourceMemory, "10000").Obj(),
	}
	pod := st.Pod("p").Req("3000m", "5000").Obj()
	tests := []struct {
		name string
		args string
		want map[string]int64
	}{
		{"least allocated", "", map[string]int64{"n1": 37, "n2": 50}},
		{"most allocated", `{"scoringStrategy":{"type":"MostAllocated"}}`, map[string]int64{"n1": 62, "n2": 50}},
		{"cpu weighted", `{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":3},{"name":"memory","weight":1}]}}`, map[string]int64{"n1": 31, "n2": 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := st.Score(t, st.Framework(t, Name, New, tt.args), pod, framework.NewSnapshot(nil, nodes))
			for n, w := range tt.want {
				if got[n] != w {
					t.Errorf("%s: got %d, want %d", n, got[n], w)
				}
			}
		})
	}
}

func TestScoreCountsNonZeroDefaults(t *testing.T) {
	// A pod without requests counts as 100m CPU and 200Mi memory.
	nodes := []*v1.Node{st.Node("n").Res(v1.ResourceCPU, "1000m").Res(v1.ResourceMemory, "2000Mi").Obj()}
	got := st.Score(t, st.Framework(t, Name, New, ""), st.Pod("p").Obj(), framework.NewSnapshot(nil, nodes))
	if got["n"] != (90+90)/2 {
		t.Errorf("got %d, want 90", got["n"])
	}
}

func TestNewRejectsBadArgs(t *testing.T) {
	for _, args := range []string{`{"scoringStrategy":{"type":"Nope"}}`, `{"scoringStrategy":{"resources":[{"name":"cpu","weight":0}]}}`, `{"bogus":1,`} {
		if _, err := New([]byte(args), nil); err == nil {
			t.Errorf("%s: no error", args)
		}
	}
}
