package framework

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// NodeToStatus holds the status of each node that failed filtering. Nodes
// not in it (not tried, or ruled out as a whole before filtering) have
// AbsentNodesStatus.
type NodeToStatus struct {
	nodeToStatus      map[string]*Status
	absentNodesStatus *Status
}

// NewNodeToStatus returns a map with the absent-node status.
func NewNodeToStatus(m map[string]*Status, absent *Status) *NodeToStatus {
	if m == nil {
		m = map[string]*Status{}
	}
	return &NodeToStatus{nodeToStatus: m, absentNodesStatus: absent}
}

// NewDefaultNodeToStatus returns an empty map whose absent nodes are
// UnschedulableAndUnresolvable.
func NewDefaultNodeToStatus() *NodeToStatus {
	return NewNodeToStatus(nil, NewStatus(UnschedulableAndUnresolvable))
}

// Get returns the node's status.
func (m *NodeToStatus) Get(name string) *Status {
	if s, ok := m.nodeToStatus[name]; ok {
		return s
	}
	return m.absentNodesStatus
}

// Set records a node's status.
func (m *NodeToStatus) Set(name string, s *Status) { m.nodeToStatus[name] = s }

// Len is the number of nodes with their own status.
func (m *NodeToStatus) Len() int { return len(m.nodeToStatus) }

// AbsentNodesStatus is the status of nodes not in the map.
func (m *NodeToStatus) AbsentNodesStatus() *Status { return m.absentNodesStatus }

// SetAbsentNodesStatus sets it.
func (m *NodeToStatus) SetAbsentNodesStatus(s *Status) { m.absentNodesStatus = s }

// ForEachExplicitNode calls fn for each node in the map.
func (m *NodeToStatus) ForEachExplicitNode(fn func(name string, s *Status)) {
	for n, s := range m.nodeToStatus {
		fn(n, s)
	}
}

// NodesForStatusCode returns the nodes of the snapshot whose status has
// code (absent nodes included when the absent status has it), in snapshot
// order.
func (m *NodeToStatus) NodesForStatusCode(snap *Snapshot, code Code) []*NodeInfo {
	var out []*NodeInfo
	for _, ni := range snap.List() {
		if m.Get(ni.Node().Name).Code() == code {
			out = append(out, ni)
		}
	}
	return out
}

// Diagnosis is why a pod fits nowhere.
type Diagnosis struct {
	NodeToStatus *NodeToStatus
	// UnschedulablePlugins are the plugins that rejected the pod on some
	// node: the queue waits for their events before trying it again.
	UnschedulablePlugins sets.Set[string]
	// PreFilterMsg is set when a PreFilter plugin rejected the pod on all
	// nodes at once.
	PreFilterMsg string
	// PostFilterMsg is what preemption said.
	PostFilterMsg string
}

// Upstream's message pieces.
const (
	NoNodeAvailableMsg = "0/%v nodes are available"
	separatorFormat    = " %v."
)

// ErrNoNodesAvailable is returned when the cluster has no nodes at all.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// FitError is a pod that fits on no node, and why.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Error renders upstream's message: "0/N nodes are available:", then either
// the PreFilter message or a count of each filter reason sorted as strings
// ("1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu"), each part
// ending in ".", then the preemption message, also followed by " ." style
// separator. Like upstream, a preemption message that itself ends in "."
// ends up with two.
func (f *FitError) Error() string {
	msg := fmt.Sprintf(NoNodeAvailableMsg+":", f.NumAllNodes)
	d := f.Diagnosis
	if d.PreFilterMsg != "" {
		msg += fmt.Sprintf(separatorFormat, d.PreFilterMsg)
	} else if d.NodeToStatus != nil {
		reasons := map[string]int{}
		d.NodeToStatus.ForEachExplicitNode(func(_ string, s *Status) {
			for _, r := range s.Reasons() {
				reasons[r]++
			}
		})
		if absent := f.NumAllNodes - d.NodeToStatus.Len(); absent > 0 {
			for _, r := range d.NodeToStatus.AbsentNodesStatus().Reasons() {
				reasons[r] += absent
			}
		}
		parts := make([]string, 0, len(reasons))
		for r, n := range reasons {
			parts = append(parts, fmt.Sprintf("%v %v", n, r))
		}
		sort.Strings(parts)
		if len(parts) > 0 {
			msg += fmt.Sprintf(separatorFormat, strings.Join(parts, ", "))
		}
	}
	if d.PostFilterMsg != "" {
		msg += fmt.Sprintf(separatorFormat, d.PostFilterMsg)
	}
	return msg
}
