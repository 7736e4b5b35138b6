package podtopologyspread

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/plugins/helper"
	"plainkube.dev/plainkube/internal/scheduler/plugins/tainttoleration"
)

// Name is the plugin's name.
const Name = "PodTopologySpread"

// Upstream's reasons.
const (
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	ErrReasonNodeLabelNotMatch   = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// Defaulting modes.
const (
	SystemDefaulting = "System"
	ListDefaulting   = "List"
)

// Args are the plugin's arguments.
type Args struct {
	// DefaultConstraints apply to pods without constraints when
	// DefaultingType is List.
	DefaultConstraints []v1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
	// DefaultingType is System (the default: upstream's built-in
	// constraints) or List.
	DefaultingType string `json:"defaultingType,omitempty"`
}

var systemDefaultConstraints = []v1.TopologySpreadConstraint{
	{TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 5},
}

// PodTopologySpread is the plugin.
type PodTopologySpread struct {
	h                  framework.Handle
	defaultConstraints []v1.TopologySpreadConstraint
	systemDefaulted    bool
	// matches memoizes per-node counts of matching pods across cycles.
	matches helper.MatchCounter
}

var (
	_ framework.PreFilterPlugin     = (*PodTopologySpread)(nil)
	_ framework.PreFilterExtensions = (*PodTopologySpread)(nil)
	_ framework.FilterPlugin        = (*PodTopologySpread)(nil)
	_ framework.PreScorePlugin      = (*PodTopologySpread)(nil)
	_ framework.ScorePlugin         = (*PodTopologySpread)(nil)
	_ framework.EnqueueExtensions   = (*PodTopologySpread)(nil)
)

// New returns the plugin.
func New(raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	args := Args{}
	if err := framework.DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	pl := &PodTopologySpread{h: h}
	switch args.DefaultingType {
	case "", SystemDefaulting:
		if len(args.DefaultConstraints) > 0 {
			return nil, fmt.Errorf("defaultConstraints must be empty with System defaulting")
		}
		pl.defaultConstraints, pl.systemDefaulted = systemDefaultConstraints, true
	case ListDefaulting:
		for _, c := range args.DefaultConstraints {
			if c.LabelSelector != nil {
				return nil, fmt.Errorf("default constraints may not have a labelSelector")
			}
		}
		pl.defaultConstraints = args.DefaultConstraints
	default:
		return nil, fmt.Errorf("defaultingType %q is not System or List", args.DefaultingType)
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*PodTopologySpread) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions.
func (*PodTopologySpread) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.ResourcePod, ActionType: framework.Add | framework.UpdatePodLabel | framework.Delete},
		{Resource: framework.ResourceNode, ActionType: framework.Add | framework.Delete | framework.UpdateNodeLabel | framework.UpdateNodeTaint},
	}
}

// constraint is a parsed v1.TopologySpreadConstraint.
type constraint struct {
	MaxSkew            int32
	TopologyKey        string
	Selector           labels.Selector
	MinDomains         int32
	NodeAffinityPolicy v1.NodeInclusionPolicy
	NodeTaintsPolicy   v1.NodeInclusionPolicy
}

func (c *constraint) matchNodeInclusionPolicies(pod *v1.Pod, node *v1.Node, req nodeaffinity.RequiredNodeAffinity) bool {
	if c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor {
		if ok, _ := req.Match(node); !ok {
			return false
		}
	}
	if c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, tainttoleration.DoNotScheduleTaintsFilter, false); untolerated {
			return false
		}
	}
	return true
}

// parseConstraints keeps the constraints with the given action, merging
// matchLabelKeys into their selectors.
func parseConstraints(in []v1.TopologySpreadConstraint, pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for _, c := range in {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, err
		}
		for _, key := range c.MatchLabelKeys {
			if v, ok := pod.Labels[key]; ok {
				r, err := labels.NewRequirement(key, selection.In, []string{v})
				if err != nil {
					return nil, err
				}
				sel = sel.Add(*r)
			}
		}
		pc := constraint{
			MaxSkew:            c.MaxSkew,
			TopologyKey:        c.TopologyKey,
			Selector:           sel,
			MinDomains:         1,
			NodeAffinityPolicy: v1.NodeInclusionPolicyHonor,
			NodeTaintsPolicy:   v1.NodeInclusionPolicyIgnore,
		}
		if c.MinDomains != nil {
			pc.MinDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			pc.NodeAffinityPolicy = *c.NodeAffinityPolicy
		}
		if c.NodeTaintsPolicy != nil {
			pc.NodeTaintsPolicy = *c.NodeTaintsPolicy
		}
		out = append(out, pc)
	}
	return out, nil
}

// defaultConstraints returns the default constraints with the given
// action for a pod that has none, selecting the pods of its workloads.
func (pl *PodTopologySpread) buildDefaultConstraints(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	cs, err := parseConstraints(pl.defaultConstraints, pod, action)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	w := pl.h.Snapshot().Workloads
	if w == nil {
		return nil, nil
	}
	sel := DefaultSelector(pod, w)
	if sel.Empty() {
		return nil, nil
	}
	for i := range cs {
		cs[i].Selector = sel
	}
	return cs, nil
}

// DefaultSelector is the selector of the pods that belong with pod: the
// union of the selectors of the Services selecting it and of its
// controller (ReplicaSet, StatefulSet, ReplicationController).
func DefaultSelector(pod *v1.Pod, w framework.WorkloadLister) labels.Selector {
	set := labels.Set{}
	for _, svc := range w.Services(pod.Namespace) {
		if len(svc.Spec.Selector) > 0 && labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			set = labels.Merge(set, svc.Spec.Selector)
		}
	}
	sel := set.AsSelector()
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return sel
	}
	if other := w.ControllerSelector(pod.Namespace, owner); other != nil {
		if reqs, ok := other.Requirements(); ok {
			sel = sel.Add(reqs...)
		}
	}
	return sel
}

func nodeLabelsMatchSpreadConstraints(nodeLabels map[string]string, cs []constraint) bool {
	for _, c := range cs {
		if _, ok := nodeLabels[c.TopologyKey]; !ok {
			return false
		}
	}
	return true
}
