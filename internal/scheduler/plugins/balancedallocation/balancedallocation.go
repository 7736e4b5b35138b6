package balancedallocation

import (
	"context"
	"encoding/json"
	"math"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/plugins/helper"
)

// Name is the plugin's name.
const Name = "NodeResourcesBalancedAllocation"

const preScoreStateKey = "PreScore" + Name

// Args are the plugin's arguments.
type Args struct {
	Resources []helper.ResourceSpec `json:"resources,omitempty"`
}

// BalancedAllocation is the plugin.
type BalancedAllocation struct {
	resources []helper.ResourceSpec
}

var (
	_ framework.PreScorePlugin = (*BalancedAllocation)(nil)
	_ framework.ScorePlugin    = (*BalancedAllocation)(nil)
)

// New returns the plugin.
func New(raw json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	args := Args{}
	if err := framework.DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	if len(args.Resources) == 0 {
		args.Resources = helper.DefaultResources
	}
	return &BalancedAllocation{resources: args.Resources}, nil
}

// Name implements framework.Plugin.
func (*BalancedAllocation) Name() string { return Name }

type preScoreState struct{ podRequests []int64 }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin; best-effort pods (no
// requests) are skipped, so that they do not all pile onto one node.
func (b *BalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	reqs := helper.PodRequestList(pod, b.resources, true)
	bestEffort := true
	for _, r := range reqs {
		if r != 0 {
			bestEffort = false
		}
	}
	if bestEffort {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreStateKey, &preScoreState{podRequests: reqs})
	return nil
}

// Score implements framework.ScorePlugin.
func (b *BalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreStateKey)
	if err != nil {
		s = &preScoreState{podRequests: helper.PodRequestList(pod, b.resources, true)}
	}
	return helper.Score(ni, s.podRequests, b.resources, true, balancedScore), nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (*BalancedAllocation) ScoreExtensions() framework.ScoreExtensions { return nil }

func balancedScore(requested, allocatable []int64) int64 {
	var fractions []float64
	var total float64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		f := float64(requested[i]) / float64(allocatable[i])
		if f > 1 {
			f = 1
		}
		total += f
		fractions = append(fractions, f)
	}
	std := 0.0
	switch n := len(fractions); {
	case n == 2:
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	case n > 2:
		mean := total / float64(n)
		var sum float64
		for _, f := range fractions {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(n))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore))
}
