package nodeaffinity

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodeAffinity"

// Upstream's reasons.
const (
	ErrReasonPod      = "node(s) didn't match Pod's node affinity/selector"
	errReasonConflict = "pod affinity terms conflict"
)

const (
	preFilterStateKey = "PreFilter" + Name
	preScoreStateKey  = "PreScore" + Name
)

// NodeAffinity is the plugin.
type NodeAffinity struct{}

var (
	_ framework.PreFilterPlugin   = (*NodeAffinity)(nil)
	_ framework.FilterPlugin      = (*NodeAffinity)(nil)
	_ framework.PreScorePlugin    = (*NodeAffinity)(nil)
	_ framework.ScorePlugin       = (*NodeAffinity)(nil)
	_ framework.EnqueueExtensions = (*NodeAffinity)(nil)
)

// New returns the plugin; it takes no arguments.
func New(_ json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	return &NodeAffinity{}, nil
}

// Name implements framework.Plugin.
func (*NodeAffinity) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions.
func (*NodeAffinity) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.ResourceNode, ActionType: framework.Add | framework.UpdateNodeLabel}}
}

type preFilterState struct {
	required nodeaffinity.RequiredNodeAffinity
}

func (s *preFilterState) Clone() framework.StateData { return s }

func required(pod *v1.Pod) *v1.NodeSelector {
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// PreFilter implements framework.PreFilterPlugin. It skips pods without a
// node selector or required affinity, and narrows the nodes to those named
// when every term selects metadata.name.
func (*NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	req := required(pod)
	if req == nil && pod.Spec.NodeSelector == nil {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, &preFilterState{required: nodeaffinity.GetRequiredNodeAffinity(pod)})
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		return nil, nil
	}
	var names sets.Set[string]
	for _, t := range req.NodeSelectorTerms {
		var termNames sets.Set[string]
		for _, r := range t.MatchFields {
			if r.Key == metav1.ObjectNameField && r.Operator == v1.NodeSelectorOpIn {
				s := sets.New(r.Values...)
				if termNames == nil {
					termNames = s
				} else {
					termNames = termNames.Intersection(s)
				}
			}
		}
		if termNames == nil {
			return nil, nil // this term allows any node; terms are ORed
		}
		names = names.Union(termNames)
	}
	if len(names) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, errReasonConflict)
	}
	return &framework.PreFilterResult{NodeNames: names}, nil
}

// PreFilterExtensions implements framework.PreFilterPlugin.
func (*NodeAffinity) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter implements framework.FilterPlugin.
func (*NodeAffinity) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterStateKey)
	if err != nil {
		s = &preFilterState{required: nodeaffinity.GetRequiredNodeAffinity(pod)}
	}
	// Parse errors are ignored, as upstream does: an invalid term matches
	// nothing.
	if ok, _ := s.required.Match(ni.Node()); !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return nil
}

type preScoreState struct {
	preferred *nodeaffinity.PreferredSchedulingTerms
}

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin; it skips pods without
// preferred node affinity.
func (*NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return framework.AsStatus(err)
	}
	state.Write(preScoreStateKey, &preScoreState{preferred: terms})
	return nil
}

// Score implements framework.ScorePlugin: the sum of the weights of the
// preferred terms the node matches.
func (*NodeAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	return s.preferred.Score(ni.Node()), nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *NodeAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions.
func (*NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
}
