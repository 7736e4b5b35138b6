package interpodaffinity

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Name is the plugin's name.
const Name = "InterPodAffinity"

// Upstream's reasons.
const (
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	ErrReasonAffinityRulesNotMatch             = "node(s) didn't match pod affinity rules"
	ErrReasonAntiAffinityRulesNotMatch         = "node(s) didn't match pod anti-affinity rules"
)

const (
	preFilterStateKey = "PreFilter" + Name
	preScoreStateKey  = "PreScore" + Name
)

// Args are the plugin's arguments.
type Args struct {
	// HardPodAffinityWeight is the score weight given to running pods'
	// required affinity terms the new pod matches (default 1).
	HardPodAffinityWeight *int32 `json:"hardPodAffinityWeight,omitempty"`
	// IgnorePreferredTermsOfExistingPods scores only by the new pod's
	// preferred terms.
	IgnorePreferredTermsOfExistingPods bool `json:"ignorePreferredTermsOfExistingPods,omitempty"`
}

// InterPodAffinity is the plugin.
type InterPodAffinity struct {
	h                     framework.Handle
	hardPodAffinityWeight int32
	ignoreExistingPrefs   bool
}

var (
	_ framework.PreFilterPlugin     = (*InterPodAffinity)(nil)
	_ framework.PreFilterExtensions = (*InterPodAffinity)(nil)
	_ framework.FilterPlugin        = (*InterPodAffinity)(nil)
	_ framework.PreScorePlugin      = (*InterPodAffinity)(nil)
	_ framework.ScorePlugin         = (*InterPodAffinity)(nil)
	_ framework.EnqueueExtensions   = (*InterPodAffinity)(nil)
)

// New returns the plugin.
func New(raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	args := Args{}
	if err := framework.DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	w := int32(1)
	if args.HardPodAffinityWeight != nil {
		w = *args.HardPodAffinityWeight
	}
	if w < 0 || w > 100 {
		return nil, fmt.Errorf("hardPodAffinityWeight %d not in [0, 100]", w)
	}
	return &InterPodAffinity{h: h, hardPodAffinityWeight: w, ignoreExistingPrefs: args.IgnorePreferredTermsOfExistingPods}, nil
}

// Name implements framework.Plugin.
func (*InterPodAffinity) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions.
func (*InterPodAffinity) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.ResourcePod, ActionType: framework.Add | framework.UpdatePodLabel | framework.Delete},
		{Resource: framework.ResourceNode, ActionType: framework.Add | framework.UpdateNodeLabel | framework.UpdateNodeTaint},
		{Resource: framework.ResourceNamespace, ActionType: framework.Add | framework.UpdateOther},
	}
}

type topologyPair struct{ key, value string }

// topologyCount counts matching pods (or terms) per topology domain.
type topologyCount map[topologyPair]int64

func (m topologyCount) update(node *v1.Node, key string, v int64) {
	if tv, ok := node.Labels[key]; ok {
		p := topologyPair{key, tv}
		m[p] += v
		if m[p] == 0 {
			delete(m, p)
		}
	}
}

// updateWithAffinityTerms counts pod in each term's domain on node if it
// matches all the terms.
func (m topologyCount) updateWithAffinityTerms(terms []framework.AffinityTerm, pod *v1.Pod, node *v1.Node, v int64) {
	if podMatchesAllAffinityTerms(terms, pod) {
		for i := range terms {
			m.update(node, terms[i].TopologyKey, v)
		}
	}
}

// updateWithAntiAffinityTerms counts pod in the domain of each term it
// matches.
func (m topologyCount) updateWithAntiAffinityTerms(terms []framework.AffinityTerm, pod *v1.Pod, nsLabels labels.Set, node *v1.Node, v int64) {
	for i := range terms {
		if terms[i].Matches(pod, nsLabels) {
			m.update(node, terms[i].TopologyKey, v)
		}
	}
}

func podMatchesAllAffinityTerms(terms []framework.AffinityTerm, pod *v1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		// The incoming pod's terms have their namespace selectors merged
		// into Namespaces already.
		if !terms[i].Matches(pod, nil) {
			return false
		}
	}
	return true
}

type preFilterState struct {
	// existingAntiAffinityCounts: domains where a running pod's required
	// anti-affinity term matches the new pod.
	existingAntiAffinityCounts topologyCount
	// affinityCounts: domains with pods matching all the new pod's
	// required affinity terms.
	affinityCounts topologyCount
	// antiAffinityCounts: domains with pods matching one of the new pod's
	// required anti-affinity terms.
	antiAffinityCounts topologyCount
	podInfo            *framework.PodInfo
	namespaceLabels    labels.Set
}

func (s *preFilterState) Clone() framework.StateData {
	c := *s
	c.existingAntiAffinityCounts = maps.Clone(s.existingAntiAffinityCounts)
	c.affinityCounts = maps.Clone(s.affinityCounts)
	c.antiAffinityCounts = maps.Clone(s.antiAffinityCounts)
	return &c
}

func (s *preFilterState) updateWithPod(pi *framework.PodInfo, node *v1.Node, v int64) {
	s.existingAntiAffinityCounts.updateWithAntiAffinityTerms(pi.RequiredAntiAffinityTerms, s.podInfo.Pod, s.namespaceLabels, node, v)
	s.affinityCounts.updateWithAffinityTerms(s.podInfo.RequiredAffinityTerms, pi.Pod, node, v)
	s.antiAffinityCounts.updateWithAntiAffinityTerms(s.podInfo.RequiredAntiAffinityTerms, pi.Pod, nil, node, v)
}

// mergeNamespaces resolves a term's namespace selector against the
// snapshot's namespaces into its namespace set, as upstream does for the
// incoming pod's terms.
func mergeNamespaces(t *framework.AffinityTerm, nsLabels map[string]labels.Set) {
	if t.NamespaceSelector.Empty() {
		return
	}
	ns := t.Namespaces.Clone()
	for name, l := range nsLabels {
		if t.NamespaceSelector.Matches(l) {
			ns.Insert(name)
		}
	}
	t.Namespaces = ns
	t.NamespaceSelector = labels.Nothing()
}

// incomingPodInfo parses pod and merges its terms' namespace selectors.
func incomingPodInfo(pod *v1.Pod, nsLabels map[string]labels.Set) *framework.PodInfo {
	pi := *framework.NewPodInfo(pod)
	copyTerms := func(ts []framework.AffinityTerm) []framework.AffinityTerm {
		out := append([]framework.AffinityTerm(nil), ts...)
		for i := range out {
			mergeNamespaces(&out[i], nsLabels)
		}
		return out
	}
	copyWeighted := func(ts []framework.WeightedAffinityTerm) []framework.WeightedAffinityTerm {
		out := append([]framework.WeightedAffinityTerm(nil), ts...)
		for i := range out {
			mergeNamespaces(&out[i].AffinityTerm, nsLabels)
		}
		return out
	}
	pi.RequiredAffinityTerms = copyTerms(pi.RequiredAffinityTerms)
	pi.RequiredAntiAffinityTerms = copyTerms(pi.RequiredAntiAffinityTerms)
	pi.PreferredAffinityTerms = copyWeighted(pi.PreferredAffinityTerms)
	pi.PreferredAntiAffinityTerms = copyWeighted(pi.PreferredAntiAffinityTerms)
	return &pi
}

// PreFilter implements framework.PreFilterPlugin.
func (pl *InterPodAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	snap := pl.h.Snapshot()
	s := &preFilterState{
		existingAntiAffinityCounts: topologyCount{},
		affinityCounts:             topologyCount{},
		antiAffinityCounts:         topologyCount{},
		podInfo:                    incomingPodInfo(pod, snap.NamespaceLabels),
		namespaceLabels:            snap.NamespaceLabelsOf(pod.Namespace),
	}
	if s.podInfo.ParseErr != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("parsing pod: %+v", s.podInfo.ParseErr))
	}
	for _, ni := range snap.HavePodsWithRequiredAntiAffinityList() {
		for _, ep := range ni.PodsWithRequiredAntiAffinity {
			s.existingAntiAffinityCounts.updateWithAntiAffinityTerms(ep.RequiredAntiAffinityTerms, pod, s.namespaceLabels, ni.Node(), 1)
		}
	}
	if len(s.podInfo.RequiredAffinityTerms) > 0 || len(s.podInfo.RequiredAntiAffinityTerms) > 0 {
		for _, ni := range nodes {
			for _, ep := range ni.Pods {
				s.affinityCounts.updateWithAffinityTerms(s.podInfo.RequiredAffinityTerms, ep.Pod, ni.Node(), 1)
				s.antiAffinityCounts.updateWithAntiAffinityTerms(s.podInfo.RequiredAntiAffinityTerms, ep.Pod, nil, ni.Node(), 1)
			}
		}
	}
	if len(s.existingAntiAffinityCounts) == 0 && len(s.podInfo.RequiredAffinityTerms) == 0 && len(s.podInfo.RequiredAntiAffinityTerms) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, s)
	return nil, nil
}

// PreFilterExtensions implements framework.PreFilterPlugin.
func (pl *InterPodAffinity) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod implements framework.PreFilterExtensions.
func (pl *InterPodAffinity) AddPod(_ context.Context, state *framework.CycleState, _ *v1.Pod, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.updateWithPod(pi, ni.Node(), 1)
	return nil
}

// RemovePod implements framework.PreFilterExtensions.
func (pl *InterPodAffinity) RemovePod(_ context.Context, state *framework.CycleState, _ *v1.Pod, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.updateWithPod(pi, ni.Node(), -1)
	return nil
}

// Filter implements framework.FilterPlugin.
func (pl *InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	if !satisfyPodAffinity(s, ni.Node()) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	if !satisfyPodAntiAffinity(s, ni.Node()) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
	}
	if !satisfyExistingPodsAntiAffinity(s, ni.Node()) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
	}
	return nil
}

func satisfyPodAffinity(s *preFilterState, node *v1.Node) bool {
	podsExist := true
	for _, t := range s.podInfo.RequiredAffinityTerms {
		v, ok := node.Labels[t.TopologyKey]
		if !ok {
			return false // every topology key must be on the node
		}
		if s.affinityCounts[topologyPair{t.TopologyKey, v}] <= 0 {
			podsExist = false
		}
	}
	if podsExist {
		return true
	}
	// The first pod of a group with affinity to itself: no pod matches
	// anywhere yet, but the pod matches its own terms.
	return len(s.affinityCounts) == 0 && podMatchesAllAffinityTerms(s.podInfo.RequiredAffinityTerms, s.podInfo.Pod)
}

func satisfyPodAntiAffinity(s *preFilterState, node *v1.Node) bool {
	if len(s.antiAffinityCounts) == 0 {
		return true
	}
	for _, t := range s.podInfo.RequiredAntiAffinityTerms {
		if v, ok := node.Labels[t.TopologyKey]; ok && s.antiAffinityCounts[topologyPair{t.TopologyKey, v}] > 0 {
			return false
		}
	}
	return true
}

func satisfyExistingPodsAntiAffinity(s *preFilterState, node *v1.Node) bool {
	if len(s.existingAntiAffinityCounts) == 0 {
		return true
	}
	for k, v := range node.Labels {
		if s.existingAntiAffinityCounts[topologyPair{k, v}] > 0 {
			return false
		}
	}
	return true
}
