package nodeports

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodePorts"

// ErrReason is upstream's reason.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

const preFilterStateKey = "PreFilter" + Name

// NodePorts is the plugin.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin   = (*NodePorts)(nil)
	_ framework.FilterPlugin      = (*NodePorts)(nil)
	_ framework.EnqueueExtensions = (*NodePorts)(nil)
)

// New returns the plugin; it takes no arguments.
func New(_ json.RawMessage, _ framework.Handle) (framework.Plugin, error) { return &NodePorts{}, nil }

// Name implements framework.Plugin.
func (*NodePorts) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions.
func (*NodePorts) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.ResourcePod, ActionType: framework.Delete},
		{Resource: framework.ResourceNode, ActionType: framework.Add},
	}
}

type preFilterState []v1.ContainerPort

func (s preFilterState) Clone() framework.StateData { return s }

// PreFilter implements framework.PreFilterPlugin; it skips pods without
// host ports.
func (*NodePorts) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	ports := framework.HostPorts(pod)
	if len(ports) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, preFilterState(ports))
	return nil, nil
}

// PreFilterExtensions implements framework.PreFilterPlugin.
func (*NodePorts) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter implements framework.FilterPlugin.
func (*NodePorts) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	ports, err := framework.ReadAs[preFilterState](state, preFilterStateKey)
	if err != nil {
		ports = framework.HostPorts(pod)
	}
	if !Fits(ports, ni.UsedPorts) {
		return framework.NewStatus(framework.Unschedulable, ErrReason)
	}
	return nil
}

// Fits reports whether none of want conflicts with the ports in use.
func Fits(want []v1.ContainerPort, inUse framework.HostPortInfo) bool {
	for _, p := range want {
		if inUse.CheckConflict(p.HostIP, string(p.Protocol), p.HostPort) {
			return false
		}
	}
	return true
}
