package scheduler

import (
	"context"
	"errors"
	"math/rand"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Bounds of the adaptive number of feasible nodes to find (upstream's).
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// Algorithm is the pure core of a scheduling cycle: given a profile's
// framework (holding the snapshot) and a pod, it filters nodes, scores the
// feasible ones and picks one, or explains why none fits and asks the
// PostFilter plugins (preemption) what to do. It does no I/O; its only
// state is the round-robin start index and the random source for ties.
// An Algorithm is used by one goroutine at a time.
type Algorithm struct {
	rand               *rand.Rand
	nextStartNodeIndex int
}

// NewAlgorithm returns a core whose ties are broken by r (a seeded source
// makes it deterministic).
func NewAlgorithm(r *rand.Rand) *Algorithm {
	if r == nil {
		r = rand.New(rand.NewSource(1))
	}
	return &Algorithm{rand: r}
}

// Decision is the outcome of one cycle.
type Decision struct {
	// Host is the chosen node; empty when the pod does not fit.
	Host string
	// EvaluatedNodes and FeasibleNodes are how many nodes were filtered
	// and how many passed.
	EvaluatedNodes, FeasibleNodes int
	// Err is a *framework.FitError when the pod fits nowhere (its
	// Diagnosis holds the per-node reasons and the preemption message), or
	// another error when a plugin failed.
	Err error
	// PostFilter is preemption's decision, when it ran and decided
	// something: a nomination (possibly empty, which clears one) and the
	// victims to evict.
	PostFilter *framework.PostFilterResult
	// State is the cycle's plugin state, which the Reserve, Unreserve and
	// PreBind plugins of the chosen node read.
	State *framework.CycleState
}

// Decide runs one scheduling cycle for pod on snap with the framework fwk.
func (a *Algorithm) Decide(ctx context.Context, fwk *framework.Framework, snap *framework.Snapshot, pod *v1.Pod) Decision {
	fwk.SetSnapshot(snap)
	state := framework.NewCycleState()
	fwk.SampleCycle(state)
	host, evaluated, feasible, err := a.schedule(ctx, fwk, state, pod)
	d := Decision{Host: host, EvaluatedNodes: evaluated, FeasibleNodes: feasible, Err: err, State: state}
	var fitErr *framework.FitError
	if err == nil || !errors.As(err, &fitErr) || !fwk.HasPostFilterPlugins() {
		return d
	}
	res, s := fwk.RunPostFilterPlugins(ctx, state, pod, fitErr.Diagnosis.NodeToStatus)
	fitErr.Diagnosis.PostFilterMsg = s.Message()
	if s.Code() == framework.Error {
		fitErr.Diagnosis.PostFilterMsg = ""
	}
	d.PostFilter = res
	return d
}

// schedule filters and scores; it returns the chosen host.
func (a *Algorithm) schedule(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod) (string, int, int, error) {
	snap := fwk.Snapshot()
	if snap.NumNodes() == 0 {
		return "", 0, 0, framework.ErrNoNodesAvailable
	}
	feasible, diagnosis, err := a.findNodesThatFitPod(ctx, fwk, state, pod)
	if err != nil {
		return "", 0, 0, err
	}
	evaluated := len(feasible) + diagnosis.NodeToStatus.Len()
	if len(feasible) == 0 {
		return "", evaluated, 0, &framework.FitError{Pod: pod, NumAllNodes: snap.NumNodes(), Diagnosis: diagnosis}
	}
	if len(feasible) == 1 {
		return feasible[0].Node().Name, evaluated, 1, nil
	}
	scores, err := a.prioritizeNodes(ctx, fwk, state, pod, feasible)
	if err != nil {
		return "", evaluated, len(feasible), err
	}
	return a.selectHost(scores), evaluated, len(feasible), nil
}

func (a *Algorithm) findNodesThatFitPod(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod) ([]*framework.NodeInfo, framework.Diagnosis, error) {
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus(), UnschedulablePlugins: sets.New[string]()}
	snap := fwk.Snapshot()
	all := snap.List()
	pre, s := fwk.RunPreFilterPlugins(ctx, state, pod)
	if !s.IsSuccess() {
		if !s.IsRejected() {
			return nil, diagnosis, s.AsError()
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(s)
		diagnosis.PreFilterMsg = s.Message()
		if s.Plugin() != "" {
			diagnosis.UnschedulablePlugins.Insert(s.Plugin())
		}
		return nil, diagnosis, nil
	}
	// A pod nominated by an earlier preemption tries its node first.
	if nom := pod.Status.NominatedNodeName; nom != "" && (pre.AllNodes() || pre.NodeNames.Has(nom)) {
		if ni := snap.Get(nom); ni != nil {
			st := fwk.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
			if st.Code() == framework.Error {
				return nil, diagnosis, st.AsError()
			}
			if st.IsSuccess() {
				return []*framework.NodeInfo{ni}, diagnosis, nil
			}
		}
	}
	nodes := all
	if !pre.AllNodes() {
		nodes = make([]*framework.NodeInfo, 0, len(pre.NodeNames))
		for _, ni := range all {
			if pre.NodeNames.Has(ni.Node().Name) {
				nodes = append(nodes, ni)
			}
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) that restrict the node names"))
	}
	feasible, err := a.findNodesThatPassFilters(ctx, fwk, state, pod, &diagnosis, nodes)
	return feasible, diagnosis, err
}

// NumFeasibleNodesToFind is how many feasible nodes to look for among
// numAllNodes before scoring: all below 100 nodes; else the percentage
// (adaptive when 0: 50% minus 1% per 125 nodes, at least 5%), at least 100.
func NumFeasibleNodesToFind(percentage *int32, numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	var p int32
	if percentage != nil {
		p = *percentage
	}
	if p == 0 {
		p = int32(50 - numAllNodes/125)
		p = max(p, minFeasibleNodesPercentageToFind)
	}
	n := numAllNodes * int(p) / 100
	return max(n, minFeasibleNodesToFind)
}

// findNodesThatPassFilters filters nodes round-robin from where the last
// cycle stopped, until enough feasible ones are found.
func (a *Algorithm) findNodesThatPassFilters(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod, diagnosis *framework.Diagnosis, nodes []*framework.NodeInfo) ([]*framework.NodeInfo, error) {
	n := len(nodes)
	if n == 0 {
		return nil, nil
	}
	want := NumFeasibleNodesToFind(fwk.PercentageOfNodesToScore(), n)
	start := a.nextStartNodeIndex % n
	feasible := make([]*framework.NodeInfo, 0, min(want, n))
	processed := 0
	for i := 0; i < n && len(feasible) < want; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ni := nodes[(start+i)%n]
		processed++
		s := fwk.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
		switch {
		case s.IsSuccess():
			feasible = append(feasible, ni)
		case s.IsRejected():
			diagnosis.NodeToStatus.Set(ni.Node().Name, s)
			diagnosis.UnschedulablePlugins.Insert(s.Plugin())
		default:
			return nil, s.AsError()
		}
	}
	a.nextStartNodeIndex = (start + processed) % n
	return feasible, nil
}

func (a *Algorithm) prioritizeNodes(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) ([]framework.NodePluginScores, error) {
	if !fwk.HasScorePlugins() {
		out := make([]framework.NodePluginScores, len(nodes))
		for i, ni := range nodes {
			out[i] = framework.NodePluginScores{Name: ni.Node().Name, TotalScore: 1}
		}
		return out, nil
	}
	if s := fwk.RunPreScorePlugins(ctx, state, pod, nodes); !s.IsSuccess() {
		return nil, s.AsError()
	}
	scores, s := fwk.RunScorePlugins(ctx, state, pod, nodes)
	if !s.IsSuccess() {
		return nil, s.AsError()
	}
	return scores, nil
}

// selectHost picks a node with the highest total score, uniformly at
// random among ties (reservoir sampling, as upstream).
func (a *Algorithm) selectHost(scores []framework.NodePluginScores) string {
	best, count := -1, 0
	for i := range scores {
		switch {
		case best < 0 || scores[i].TotalScore > scores[best].TotalScore:
			best, count = i, 1
		case scores[i].TotalScore == scores[best].TotalScore:
			count++
			if a.rand.Intn(count) == 0 {
				best = i
			}
		}
	}
	if best < 0 {
		return ""
	}
	return scores[best].Name
}
