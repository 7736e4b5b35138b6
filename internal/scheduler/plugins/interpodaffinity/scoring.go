package interpodaffinity

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// scoreMap sums weights per topology key and value.
type scoreMap map[string]map[string]int64

func (m scoreMap) processTerm(t *framework.AffinityTerm, weight int32, pod *v1.Pod, nsLabels labels.Set, node *v1.Node, mult int32) {
	if !t.Matches(pod, nsLabels) {
		return
	}
	v, ok := node.Labels[t.TopologyKey]
	if !ok {
		return
	}
	if m[t.TopologyKey] == nil {
		m[t.TopologyKey] = map[string]int64{}
	}
	m[t.TopologyKey][v] += int64(weight * mult)
}

func (m scoreMap) processTerms(ts []framework.WeightedAffinityTerm, pod *v1.Pod, nsLabels labels.Set, node *v1.Node, mult int32) {
	for i := range ts {
		m.processTerm(&ts[i].AffinityTerm, ts[i].Weight, pod, nsLabels, node, mult)
	}
}

type preScoreState struct {
	topologyScore scoreMap
}

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin: it sums, per topology
// domain, the weights of the new pod's preferred terms matched by running
// pods (anti-affinity negative), and of running pods' required affinity
// (HardPodAffinityWeight) and preferred terms matched by the new pod.
func (pl *InterPodAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	if len(nodes) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	a := pod.Spec.Affinity
	hasConstraints := a != nil && ((a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) ||
		(a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0))
	if pl.ignoreExistingPrefs && !hasConstraints {
		return framework.NewStatus(framework.Skip)
	}
	snap := pl.h.Snapshot()
	all := snap.HavePodsWithAffinityList()
	if hasConstraints {
		all = snap.List()
	}
	pi := incomingPodInfo(pod, snap.NamespaceLabels)
	nsLabels := snap.NamespaceLabelsOf(pod.Namespace)
	m := scoreMap{}
	for _, ni := range all {
		node := ni.Node()
		if len(node.Labels) == 0 {
			continue
		}
		pods := ni.PodsWithAffinity
		if hasConstraints {
			pods = ni.Pods
		}
		for _, ep := range pods {
			m.processTerms(pi.PreferredAffinityTerms, ep.Pod, nil, node, 1)
			m.processTerms(pi.PreferredAntiAffinityTerms, ep.Pod, nil, node, -1)
			if pl.hardPodAffinityWeight > 0 {
				for i := range ep.RequiredAffinityTerms {
					m.processTerm(&ep.RequiredAffinityTerms[i], pl.hardPodAffinityWeight, pod, nsLabels, node, 1)
				}
			}
			if !pl.ignoreExistingPrefs {
				m.processTerms(ep.PreferredAffinityTerms, pod, nsLabels, node, 1)
				m.processTerms(ep.PreferredAntiAffinityTerms, pod, nsLabels, node, -1)
			}
		}
	}
	if len(m) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreStateKey, &preScoreState{topologyScore: m})
	return nil
}

// Score implements framework.ScorePlugin.
func (pl *InterPodAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	var score int64
	for key, values := range s.topologyScore {
		if v, ok := ni.Node().Labels[key]; ok {
			score += values[v]
		}
	}
	return score, nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *InterPodAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions: min-max scaling to
// [0, MaxNodeScore].
func (pl *InterPodAffinity) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	s, err := framework.ReadAs[*preScoreState](state, preScoreStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(s.topologyScore) == 0 {
		return nil
	}
	minC, maxC := int64(math.MaxInt64), int64(math.MinInt64)
	for _, sc := range scores {
		minC = min(minC, sc.Score)
		maxC = max(maxC, sc.Score)
	}
	diff := maxC - minC
	for i := range scores {
		f := 0.0
		if diff > 0 {
			f = float64(framework.MaxNodeScore) * (float64(scores[i].Score-minC) / float64(diff))
		}
		scores[i].Score = int64(f)
	}
	return nil
}
