package framework

// Resource kinds a ClusterEvent can be about.
const (
	ResourceNode         = "Node"
	ResourcePod          = "Pod" // a pod bound to a node (or assumed)
	ResourcePVC          = "PersistentVolumeClaim"
	ResourcePV           = "PersistentVolume"
	ResourceStorageClass = "StorageClass"
	ResourceNamespace    = "Namespace"
)

// ActionType says what happened to a resource; values combine as a mask.
type ActionType int

const (
	Add ActionType = 1 << iota
	Delete
	UpdateNodeAllocatable
	UpdateNodeLabel
	UpdateNodeTaint // taints or spec.unschedulable
	UpdateNodeCondition
	UpdateNodeOther // anything else on a node (images, addresses)
	UpdatePodLabel  // a bound pod's labels
	UpdatePodOther  // anything else on a bound pod
	UpdateOther     // any update of a resource other than Node and Pod
	Update          = UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint | UpdateNodeCondition | UpdateNodeOther | UpdatePodLabel | UpdatePodOther | UpdateOther
	All             = Add | Delete | Update
)

// ClusterEvent is a change in the cluster that may make pods that failed
// to schedule fit now.
type ClusterEvent struct {
	Resource   string
	ActionType ActionType
	// Label names the event in logs.
	Label string
}

// Match reports whether the event e (something that happened) is one that
// registered (what a plugin listens for) covers.
func (registered ClusterEvent) Match(e ClusterEvent) bool {
	return registered.Resource == e.Resource && registered.ActionType&e.ActionType != 0
}

// EventUnschedulableTimeout is the periodic flush of pods that waited too
// long in the unschedulable queue; it matches every plugin.
var EventUnschedulableTimeout = ClusterEvent{Resource: "*", ActionType: All, Label: "UnschedulableTimeout"}

// EnqueueExtensions is implemented by plugins that can reject a pod: the
// events after which a pod they rejected may fit. A pod stays in the
// unschedulable queue until one of the events registered by the plugins
// that rejected it happens (or five minutes pass).
type EnqueueExtensions interface {
	Plugin
	EventsToRegister() []ClusterEvent
}
