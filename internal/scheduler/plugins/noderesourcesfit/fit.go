package noderesourcesfit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/plugins/helper"
)

// Name is the plugin's name.
const Name = "NodeResourcesFit"

// Scoring strategies.
const (
	LeastAllocated = "LeastAllocated"
	MostAllocated  = "MostAllocated"
)

const (
	preFilterStateKey = "PreFilter" + Name
	preScoreStateKey  = "PreScore" + Name
)

// Args are the plugin's arguments (upstream's NodeResourcesFitArgs).
type Args struct {
	// IgnoredResources are extended resources the filter does not check.
	IgnoredResources []string `json:"ignoredResources,omitempty"`
	// IgnoredResourceGroups are extended-resource domains (the part
	// before "/") the filter does not check.
	IgnoredResourceGroups []string         `json:"ignoredResourceGroups,omitempty"`
	ScoringStrategy       *ScoringStrategy `json:"scoringStrategy,omitempty"`
}

// ScoringStrategy picks the score and the resources it weighs.
type ScoringStrategy struct {
	Type      string                `json:"type,omitempty"`
	Resources []helper.ResourceSpec `json:"resources,omitempty"`
}

// Fit is the plugin.
type Fit struct {
	ignored       sets.Set[string]
	ignoredGroups sets.Set[string]
	strategy      string
	resources     []helper.ResourceSpec
	scorer        func(requested, allocatable []int64) int64
}

var (
	_ framework.PreFilterPlugin   = (*Fit)(nil)
	_ framework.FilterPlugin      = (*Fit)(nil)
	_ framework.PreScorePlugin    = (*Fit)(nil)
	_ framework.ScorePlugin       = (*Fit)(nil)
	_ framework.EnqueueExtensions = (*Fit)(nil)
)

// New returns the plugin.
func New(raw json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	args := Args{}
	if err := framework.DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	f := &Fit{
		ignored:       sets.New(args.IgnoredResources...),
		ignoredGroups: sets.New(args.IgnoredResourceGroups...),
		strategy:      LeastAllocated,
		resources:     helper.DefaultResources,
	}
	if s := args.ScoringStrategy; s != nil {
		if s.Type != "" {
			f.strategy = s.Type
		}
		if len(s.Resources) > 0 {
			f.resources = s.Resources
		}
	}
	for _, r := range f.resources {
		if r.Weight <= 0 || r.Weight > 100 {
			return nil, fmt.Errorf("resource %q: weight %d not in [1, 100]", r.Name, r.Weight)
		}
	}
	switch f.strategy {
	case LeastAllocated:
		f.scorer = weighted(f.resources, LeastRequestedScore)
	case MostAllocated:
		f.scorer = weighted(f.resources, MostRequestedScore)
	default:
		return nil, fmt.Errorf("scoring strategy %q is not supported", f.strategy)
	}
	return f, nil
}

// Name implements framework.Plugin.
func (*Fit) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions.
func (*Fit) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.ResourcePod, ActionType: framework.Delete},
		{Resource: framework.ResourceNode, ActionType: framework.Add | framework.UpdateNodeAllocatable | framework.UpdateNodeTaint | framework.UpdateNodeLabel},
	}
}

type preFilterState struct{ request *framework.Resource }

func (s *preFilterState) Clone() framework.StateData { return s }

// PreFilter implements framework.PreFilterPlugin: it computes the pod's
// request once.
func (*Fit) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	state.Write(preFilterStateKey, &preFilterState{request: framework.PodRequests(pod, false)})
	return nil, nil
}

// PreFilterExtensions implements framework.PreFilterPlugin.
func (*Fit) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter implements framework.FilterPlugin.
func (f *Fit) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterStateKey)
	if err != nil {
		s = &preFilterState{request: framework.PodRequests(pod, false)}
	}
	insufficient := fitsRequest(s.request, ni, f.ignored, f.ignoredGroups)
	if len(insufficient) == 0 {
		return nil
	}
	reasons := make([]string, len(insufficient))
	for i, r := range insufficient {
		reasons[i] = r.Reason
	}
	return framework.NewStatus(framework.Unschedulable, reasons...)
}

// InsufficientResource is one resource a node lacks for a pod.
type InsufficientResource struct {
	ResourceName v1.ResourceName
	Reason       string
	Requested    int64
	Used         int64
	Capacity     int64
}

// Fits returns what the node lacks to run pod (nothing if it fits).
func Fits(pod *v1.Pod, ni *framework.NodeInfo) []InsufficientResource {
	return fitsRequest(framework.PodRequests(pod, false), ni, nil, nil)
}

func fitsRequest(req *framework.Resource, ni *framework.NodeInfo, ignored, ignoredGroups sets.Set[string]) []InsufficientResource {
	var out []InsufficientResource
	if len(ni.Pods)+1 > ni.Allocatable.AllowedPodNumber {
		out = append(out, InsufficientResource{v1.ResourcePods, "Too many pods", 1, int64(len(ni.Pods)), int64(ni.Allocatable.AllowedPodNumber)})
	}
	if req.IsZero() {
		return out
	}
	alloc, used := ni.Allocatable, ni.Requested
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-used.MilliCPU {
		out = append(out, InsufficientResource{v1.ResourceCPU, "Insufficient cpu", req.MilliCPU, used.MilliCPU, alloc.MilliCPU})
	}
	if req.Memory > 0 && req.Memory > alloc.Memory-used.Memory {
		out = append(out, InsufficientResource{v1.ResourceMemory, "Insufficient memory", req.Memory, used.Memory, alloc.Memory})
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		out = append(out, InsufficientResource{v1.ResourceEphemeralStorage, "Insufficient ephemeral-storage", req.EphemeralStorage, used.EphemeralStorage, alloc.EphemeralStorage})
	}
	for name, q := range req.ScalarResources {
		if q == 0 {
			continue
		}
		if framework.IsExtendedResourceName(name) {
			group := ""
			if len(ignoredGroups) > 0 {
				group, _, _ = strings.Cut(string(name), "/")
			}
			if ignored.Has(string(name)) || ignoredGroups.Has(group) {
				continue
			}
		}
		if q > alloc.ScalarResources[name]-used.ScalarResources[name] {
			out = append(out, InsufficientResource{name, fmt.Sprintf("Insufficient %v", name), q, used.ScalarResources[name], alloc.ScalarResources[name]})
		}
	}
	return out
}

type preScoreState struct{ podRequests []int64 }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin.
func (f *Fit) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(preScoreStateKey, &preScoreState{podRequests: helper.PodRequestList(pod, f.resources, false)})
	return nil
}

// Score implements framework.ScorePlugin.
func (f *Fit) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreStateKey)
	if err != nil {
		s = &preScoreState{podRequests: helper.PodRequestList(pod, f.resources, false)}
	}
	return helper.Score(ni, s.podRequests, f.resources, false, f.scorer), nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (*Fit) ScoreExtensions() framework.ScoreExtensions { return nil }

func weighted(resources []helper.ResourceSpec, score func(requested, capacity int64) int64) func(requested, allocatable []int64) int64 {
	return func(requested, allocatable []int64) int64 {
		var total, weights int64
		for i := range requested {
			if allocatable[i] == 0 {
				continue
			}
			total += score(requested[i], allocatable[i]) * resources[i].Weight
			weights += resources[i].Weight
		}
		if weights == 0 {
			return 0
		}
		return total / weights
	}
}

// LeastRequestedScore favours free capacity: (capacity - requested) *
// MaxNodeScore / capacity, 0 when over capacity.
func LeastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}

// MostRequestedScore favours used capacity: requested * MaxNodeScore /
// capacity, capped at MaxNodeScore.
func MostRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 {
		return 0
	}
	if requested > capacity {
		requested = capacity
	}
	return requested * framework.MaxNodeScore / capacity
}
