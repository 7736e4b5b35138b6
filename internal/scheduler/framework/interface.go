package framework

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Plugin is a scheduler plugin: it implements one or more of the extension
// point interfaces below.
type Plugin interface {
	Name() string
}

// PreFilterResult narrows the nodes worth filtering; nil means all.
type PreFilterResult struct {
	NodeNames sets.Set[string]
}

// AllNodes reports that r does not narrow anything.
func (r *PreFilterResult) AllNodes() bool { return r == nil || r.NodeNames == nil }

// Merge intersects two results.
func (r *PreFilterResult) Merge(o *PreFilterResult) *PreFilterResult {
	if r.AllNodes() {
		return o
	}
	if o.AllNodes() {
		return r
	}
	return &PreFilterResult{NodeNames: r.NodeNames.Intersection(o.NodeNames)}
}

// PreFilterPlugin runs once per cycle before filtering, to check the pod
// itself and pre-compute state for Filter. nodes are all nodes of the
// snapshot.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) (*PreFilterResult, *Status)
	// PreFilterExtensions returns nil, or the hooks that keep the
	// pre-computed state right when preemption adds or removes pods.
	PreFilterExtensions() PreFilterExtensions
}

// PreFilterExtensions update PreFilter state for a pod added to or removed
// from nodeInfo (a clone being tried during preemption or with nominated
// pods).
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status
}

// FilterPlugin says whether the pod can run on one node.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
}

// PostFilterResult is what a PostFilter plugin (preemption) decided: the
// node the pod is nominated to, the pods to evict so that it fits there,
// and the lower-priority pods whose nomination to that node must be
// cleared. The driver carries these out through the API.
type PostFilterResult struct {
	NominatedNodeName string
	Victims           []*v1.Pod
	ClearNominated    []*v1.Pod
}

// PostFilterPlugin runs when no node fits, given each node's status.
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *v1.Pod, filtered *NodeToStatus) (*PostFilterResult, *Status)
}

// PreScorePlugin runs once before scoring, with the feasible nodes.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// NodeScore is one node's score.
type NodeScore struct {
	Name  string
	Score int64
}

// ScorePlugin ranks feasible nodes. Scores are normalized to
// [MinNodeScore, MaxNodeScore] (by NormalizeScore where the plugin has
// ScoreExtensions), multiplied by the plugin's weight and summed.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) (int64, *Status)
	ScoreExtensions() ScoreExtensions
}

// ScoreExtensions normalizes a plugin's raw scores in place.
type ScoreExtensions interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores []NodeScore) *Status
}

// ReservePlugin keeps, for the pod assumed on nodeName, what the pod will
// use there (a volume to bind) so that later cycles do not hand it to
// another pod. Reserve runs on the scheduling cycle's goroutine once a
// node is chosen; Unreserve undoes it when the pod is not bound after all
// (a later Reserve or PreBind failed, or binding did). Unreserve must be
// idempotent and must not fail.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// PreBindPlugin does what must be done through the API before the pod is
// bound to nodeName (bind its volumes), on the binding goroutine, so it
// may wait. A failure makes the pod unschedulable for this attempt.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// Handle is what a plugin can reach of the framework that runs it: the
// current snapshot and, for preemption, the filters.
type Handle interface {
	// Snapshot is the snapshot of the cycle being run.
	Snapshot() *Snapshot
	// RunFilterPluginsWithNominatedPods runs the filters on nodeInfo as if
	// the pods nominated to it with equal or higher priority were there.
	RunFilterPluginsWithNominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
	RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status
	// ClientSet is the scheduler's API client; nil when the framework
	// runs without one (tests of the filters alone).
	ClientSet() kubernetes.Interface
	// SharedInformerFactory is the scheduler's informer factory, for
	// plugins that read kinds the snapshot does not hold; nil without
	// one. Informers a plugin asks for in its Factory are started with
	// the scheduler's.
	SharedInformerFactory() informers.SharedInformerFactory
}

// Factory makes a plugin from its JSON arguments (nil for none).
type Factory func(args json.RawMessage, h Handle) (Plugin, error)

// Registry maps plugin names to factories.
type Registry map[string]Factory

// DecodeArgs unmarshals args, when given, into into (strictly).
func DecodeArgs(args json.RawMessage, into any) error {
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	return json.Unmarshal(args, into)
}
