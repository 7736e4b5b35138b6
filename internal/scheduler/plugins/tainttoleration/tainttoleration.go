package tainttoleration

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Name is the plugin's name.
const Name = "TaintToleration"

const preScoreStateKey = "PreScore" + Name

// TaintToleration is the plugin.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin      = (*TaintToleration)(nil)
	_ framework.PreScorePlugin    = (*TaintToleration)(nil)
	_ framework.ScorePlugin       = (*TaintToleration)(nil)
	_ framework.ScoreExtensions   = (*TaintToleration)(nil)
	_ framework.EnqueueExtensions = (*TaintToleration)(nil)
)

// New returns the plugin; it takes no arguments.
func New(_ json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	return &TaintToleration{}, nil
}

// Name implements framework.Plugin.
func (*TaintToleration) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions.
func (*TaintToleration) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.ResourceNode, ActionType: framework.Add | framework.UpdateNodeTaint}}
}

// DoNotScheduleTaintsFilter selects the taints that keep pods off a node.
func DoNotScheduleTaintsFilter(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// Filter implements framework.FilterPlugin.
func (*TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), ni.Node().Spec.Taints, pod.Spec.Tolerations, DoNotScheduleTaintsFilter, false)
	if !untolerated {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
}

type preScoreState struct{ tolerations []v1.Toleration }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin: it keeps the pod's
// tolerations that can tolerate PreferNoSchedule taints.
func (*TaintToleration) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	var ts []v1.Toleration
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			ts = append(ts, t)
		}
	}
	state.Write(preScoreStateKey, &preScoreState{tolerations: ts})
	return nil
}

// Score implements framework.ScorePlugin: the count of PreferNoSchedule
// taints the pod does not tolerate (reversed by NormalizeScore).
func (*TaintToleration) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	var n int64
	for i := range ni.Node().Spec.Taints {
		t := &ni.Node().Spec.Taints[i]
		if t.Effect != v1.TaintEffectPreferNoSchedule {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(klog.Background(), s.tolerations, t, false) {
			n++
		}
	}
	return n, nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *TaintToleration) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions.
func (*TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
}
