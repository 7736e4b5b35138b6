package nodename

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodeName"

// ErrReason is upstream's reason.
const ErrReason = "node(s) didn't match the requested node name"

// NodeName is the plugin.
type NodeName struct{}

var (
	_ framework.FilterPlugin      = (*NodeName)(nil)
	_ framework.EnqueueExtensions = (*NodeName)(nil)
)

// New returns the plugin; it takes no arguments.
func New(_ json.RawMessage, _ framework.Handle) (framework.Plugin, error) { return &NodeName{}, nil }

// Name implements framework.Plugin.
func (*NodeName) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions.
func (*NodeName) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.ResourceNode, ActionType: framework.Add}}
}

// Filter implements framework.FilterPlugin.
func (*NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if pod.Spec.NodeName == "" || pod.Spec.NodeName == ni.Node().Name {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
}
