package podtopologyspread

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/plugins/helper"
)

const preFilterStateKey = "PreFilter" + Name

type domainCount struct {
	value string
	count int
}

// criticalPaths are the two domains with the fewest matching pods, the
// first being the global minimum.
type criticalPaths [2]domainCount

func newCriticalPaths() *criticalPaths {
	return &criticalPaths{{count: math.MaxInt32}, {count: math.MaxInt32}}
}

func (p *criticalPaths) update(value string, n int) {
	i := -1
	if value == p[0].value {
		i = 0
	} else if value == p[1].value {
		i = 1
	}
	if i >= 0 {
		p[i].count = n
		if p[0].count > p[1].count {
			p[0], p[1] = p[1], p[0]
		}
		return
	}
	if n < p[0].count {
		p[1] = p[0]
		p[0] = domainCount{value, n}
	} else if n < p[1].count {
		p[1] = domainCount{value, n}
	}
}

type preFilterState struct {
	constraints []constraint
	// counts per constraint: matching pods per topology value, for the
	// domains of the nodes that count.
	counts   []map[string]int
	critical []*criticalPaths
}

func (s *preFilterState) Clone() framework.StateData {
	c := &preFilterState{constraints: s.constraints, counts: make([]map[string]int, len(s.counts)), critical: make([]*criticalPaths, len(s.critical))}
	for i := range s.counts {
		c.counts[i] = make(map[string]int, len(s.counts[i]))
		for k, v := range s.counts[i] {
			c.counts[i][k] = v
		}
		cp := *s.critical[i]
		c.critical[i] = &cp
	}
	return c
}

func (s *preFilterState) minMatchNum(i int) int {
	if len(s.counts[i]) < int(s.constraints[i].MinDomains) {
		return 0 // fewer domains than minDomains: the global minimum is 0
	}
	return s.critical[i][0].count
}

// PreFilter implements framework.PreFilterPlugin: it counts, per
// DoNotSchedule constraint and domain, the pods matching the constraint's
// selector. Pods without such constraints are skipped.
func (pl *PodTopologySpread) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	var cs []constraint
	var err error
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		cs, err = parseConstraints(pod.Spec.TopologySpreadConstraints, pod, v1.DoNotSchedule)
	} else {
		cs, err = pl.buildDefaultConstraints(pod, v1.DoNotSchedule)
	}
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	if len(cs) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	s := &preFilterState{constraints: cs, counts: make([]map[string]int, len(cs)), critical: make([]*criticalPaths, len(cs))}
	for i := range cs {
		s.counts[i] = map[string]int{}
	}
	keys := make([]string, len(cs))
	for i := range cs {
		keys[i] = helper.SelectorKey(pod.Namespace, cs[i].Selector)
	}
	req := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range nodes {
		node := ni.Node()
		if !nodeLabelsMatchSpreadConstraints(node.Labels, cs) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if !c.matchNodeInclusionPolicies(pod, node, req) {
				continue
			}
			s.counts[i][node.Labels[c.TopologyKey]] += pl.matches.Count(ni, c.Selector, pod.Namespace, keys[i])
		}
	}
	for i := range cs {
		s.critical[i] = newCriticalPaths()
		for v, n := range s.counts[i] {
			s.critical[i].update(v, n)
		}
	}
	state.Write(preFilterStateKey, s)
	return nil, nil
}

// PreFilterExtensions implements framework.PreFilterPlugin.
func (pl *PodTopologySpread) PreFilterExtensions() framework.PreFilterExtensions { return pl }

func (pl *PodTopologySpread) updateWithPod(state *framework.CycleState, pod *v1.Pod, pi *framework.PodInfo, node *v1.Node, delta int) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	if pi.Pod.Namespace != pod.Namespace || node == nil || !nodeLabelsMatchSpreadConstraints(node.Labels, s.constraints) {
		return nil
	}
	req := nodeaffinity.GetRequiredNodeAffinity(pod)
	set := labels.Set(pi.Pod.Labels)
	for i := range s.constraints {
		c := &s.constraints[i]
		if !c.Selector.Matches(set) || !c.matchNodeInclusionPolicies(pod, node, req) {
			continue
		}
		v := node.Labels[c.TopologyKey]
		s.counts[i][v] += delta
		s.critical[i].update(v, s.counts[i][v])
	}
	return nil
}

// AddPod implements framework.PreFilterExtensions.
func (pl *PodTopologySpread) AddPod(_ context.Context, state *framework.CycleState, pod *v1.Pod, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	return pl.updateWithPod(state, pod, pi, ni.Node(), 1)
}

// RemovePod implements framework.PreFilterExtensions.
func (pl *PodTopologySpread) RemovePod(_ context.Context, state *framework.CycleState, pod *v1.Pod, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	return pl.updateWithPod(state, pod, pi, ni.Node(), -1)
}

// Filter implements framework.FilterPlugin.
func (pl *PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	podLabels := labels.Set(pod.Labels)
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := node.Labels[c.TopologyKey]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		self := 0
		if c.Selector.Matches(podLabels) {
			self = 1
		}
		if skew := s.counts[i][v] + self - s.minMatchNum(i); skew > int(c.MaxSkew) {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}
