package podtopologyspread

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/plugins/helper"
)

const preScoreStateKey = "PreScore" + Name

type preScoreState struct {
	constraints []constraint
	// keys are the constraints' helper.SelectorKey, for pl.matches.
	keys []string
	// ignored are feasible nodes missing a topology key; they score 0.
	ignored sets.Set[string]
	// counts per constraint and topology value (hostname constraints are
	// counted per node in Score).
	counts  []map[string]int64
	weights []float64
}

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin.
func (pl *PodTopologySpread) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, filtered []*framework.NodeInfo) *framework.Status {
	all := pl.h.Snapshot().List()
	if len(filtered) == 0 || len(all) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	var cs []constraint
	var err error
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		cs, err = parseConstraints(pod.Spec.TopologySpreadConstraints, pod, v1.ScheduleAnyway)
	} else {
		cs, err = pl.buildDefaultConstraints(pod, v1.ScheduleAnyway)
	}
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	// Only custom constraints require every topology key on a node: with
	// the system defaults, nodes without a zone are still spread by
	// hostname.
	requireAll := len(pod.Spec.TopologySpreadConstraints) > 0 || !pl.systemDefaulted
	s := &preScoreState{constraints: cs, keys: make([]string, len(cs)), ignored: sets.New[string](), counts: make([]map[string]int64, len(cs)), weights: make([]float64, len(cs))}
	for i := range cs {
		s.keys[i] = helper.SelectorKey(pod.Namespace, cs[i].Selector)
	}
	sizes := make([]int, len(cs))
	for i := range cs {
		s.counts[i] = map[string]int64{}
	}
	for _, ni := range filtered {
		node := ni.Node()
		if requireAll && !nodeLabelsMatchSpreadConstraints(node.Labels, cs) {
			s.ignored.Insert(node.Name)
			continue
		}
		for i, c := range cs {
			if c.TopologyKey == v1.LabelHostname {
				continue
			}
			v := node.Labels[c.TopologyKey]
			if _, ok := s.counts[i][v]; !ok {
				s.counts[i][v] = 0
				sizes[i]++
			}
		}
	}
	for i, c := range cs {
		n := sizes[i]
		if c.TopologyKey == v1.LabelHostname {
			n = len(filtered) - s.ignored.Len()
		}
		s.weights[i] = math.Log(float64(n + 2))
	}
	req := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range all {
		node := ni.Node()
		if requireAll && !nodeLabelsMatchSpreadConstraints(node.Labels, cs) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if !c.matchNodeInclusionPolicies(pod, node, req) {
				continue
			}
			v := node.Labels[c.TopologyKey]
			if _, ok := s.counts[i][v]; !ok || c.TopologyKey == v1.LabelHostname {
				continue
			}
			s.counts[i][v] += int64(pl.matches.Count(ni, c.Selector, pod.Namespace, s.keys[i]))
		}
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// Score implements framework.ScorePlugin: the matching pods in the node's
// domains, weighted by the log of the number of domains, plus maxSkew-1.
// Lower is better; NormalizeScore reverses it.
func (pl *PodTopologySpread) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	node := ni.Node()
	if s.ignored.Has(node.Name) {
		return 0, nil
	}
	var score float64
	for i, c := range s.constraints {
		v, ok := node.Labels[c.TopologyKey]
		if !ok {
			continue
		}
		var n int64
		if c.TopologyKey == v1.LabelHostname {
			n = int64(pl.matches.Count(ni, c.Selector, pod.Namespace, s.keys[i]))
		} else {
			n = s.counts[i][v]
		}
		score += float64(n)*s.weights[i] + float64(c.MaxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *PodTopologySpread) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions.
func (pl *PodTopologySpread) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	s, err := framework.ReadAs[*preScoreState](state, preScoreStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	const invalid = -1
	minS, maxS := int64(math.MaxInt64), int64(0)
	for i := range scores {
		if s.ignored.Has(scores[i].Name) {
			scores[i].Score = invalid
			continue
		}
		minS = min(minS, scores[i].Score)
		maxS = max(maxS, scores[i].Score)
	}
	for i := range scores {
		switch {
		case scores[i].Score == invalid:
			scores[i].Score = 0
		case maxS == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (maxS + minS - scores[i].Score) / maxS
		}
	}
	return nil
}
