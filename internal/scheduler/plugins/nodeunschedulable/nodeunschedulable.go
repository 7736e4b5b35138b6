package nodeunschedulable

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodeUnschedulable"

// ErrReasonUnschedulable is upstream's reason.
const ErrReasonUnschedulable = "node(s) were unschedulable"

// NodeUnschedulable is the plugin.
type NodeUnschedulable struct{}

var (
	_ framework.FilterPlugin      = (*NodeUnschedulable)(nil)
	_ framework.EnqueueExtensions = (*NodeUnschedulable)(nil)
)

// New returns the plugin; it takes no arguments.
func New(_ json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	return &NodeUnschedulable{}, nil
}

// Name implements framework.Plugin.
func (*NodeUnschedulable) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions.
func (*NodeUnschedulable) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.ResourceNode, ActionType: framework.Add | framework.UpdateNodeTaint}}
}

var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// Filter implements framework.FilterPlugin.
func (*NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if !ni.Node().Spec.Unschedulable {
		return nil
	}
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &unschedulableTaint, false) {
			return nil
		}
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}
