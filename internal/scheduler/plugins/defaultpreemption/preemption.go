package defaultpreemption

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Name is the plugin's name.
const Name = "DefaultPreemption"

// Messages, as upstream.
const (
	msgNotHelpful        = "Preemption is not helpful for scheduling"
	msgNoVictims         = "No preemption victims found for incoming pod"
	msgPolicyNever       = "not eligible due to preemptionPolicy=Never."
	msgTerminatingVictim = "not eligible due to a terminating pod on the nominated node."
)

// Args are the plugin's arguments (upstream's DefaultPreemptionArgs).
type Args struct {
	// MinCandidateNodesPercentage and MinCandidateNodesAbsolute bound how
	// many candidate nodes the dry run collects before choosing: the
	// larger of the two, at most all nodes.
	MinCandidateNodesPercentage *int32 `json:"minCandidateNodesPercentage,omitempty"`
	MinCandidateNodesAbsolute   *int32 `json:"minCandidateNodesAbsolute,omitempty"`
}

// DefaultPreemption is the plugin.
type DefaultPreemption struct {
	h             framework.Handle
	minPercentage int32
	minAbsolute   int32
}

var _ framework.PostFilterPlugin = (*DefaultPreemption)(nil)

// New returns the plugin.
func New(raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	args := Args{}
	if err := framework.DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	pl := &DefaultPreemption{h: h, minPercentage: 10, minAbsolute: 100}
	if args.MinCandidateNodesPercentage != nil {
		pl.minPercentage = *args.MinCandidateNodesPercentage
	}
	if args.MinCandidateNodesAbsolute != nil {
		pl.minAbsolute = *args.MinCandidateNodesAbsolute
	}
	if pl.minPercentage < 0 || pl.minPercentage > 100 || pl.minAbsolute < 0 || pl.minPercentage+pl.minAbsolute == 0 {
		return nil, fmt.Errorf("minCandidateNodesPercentage %d and minCandidateNodesAbsolute %d are invalid", pl.minPercentage, pl.minAbsolute)
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*DefaultPreemption) Name() string { return Name }

// PostFilter implements framework.PostFilterPlugin.
func (pl *DefaultPreemption) PostFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, m *framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	res, s := pl.preempt(ctx, state, pod, m)
	if msg := s.Message(); msg != "" {
		return res, framework.NewStatus(s.Code(), "preemption: "+msg)
	}
	return res, s
}

type candidate struct {
	node             string
	victims          []*v1.Pod
	numPDBViolations int
}

func (pl *DefaultPreemption) preempt(ctx context.Context, state *framework.CycleState, pod *v1.Pod, m *framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	snap := pl.h.Snapshot()
	if ok, msg := pl.eligible(pod, m.Get(pod.Status.NominatedNodeName)); !ok {
		return nil, framework.NewStatus(framework.Unschedulable, msg)
	}
	all := snap.List()
	if len(all) == 0 {
		return nil, framework.AsStatus(framework.ErrNoNodesAvailable)
	}
	potential := m.NodesForStatusCode(snap, framework.Unschedulable)
	statuses := framework.NewDefaultNodeToStatus()
	var candidates []*candidate
	if len(potential) > 0 {
		var err error
		candidates, err = pl.dryRun(ctx, state, pod, potential, snap.PDBs, statuses)
		if err != nil && len(candidates) == 0 {
			return nil, framework.AsStatus(err)
		}
	}
	if len(candidates) == 0 {
		statuses.SetAbsentNodesStatus(framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNotHelpful))
		fe := &framework.FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: framework.Diagnosis{NodeToStatus: statuses}}
		// An empty nomination clears the pod's nominatedNodeName.
		return &framework.PostFilterResult{}, framework.NewStatus(framework.Unschedulable, fe.Error())
	}
	best := pickOne(candidates)
	res := &framework.PostFilterResult{NominatedNodeName: best.node, Victims: best.victims}
	prio := framework.PodPriority(pod)
	for _, pi := range snap.NominatedPods[best.node] {
		if pi.Pod.UID != pod.UID && framework.PodPriority(pi.Pod) < prio {
			res.ClearNominated = append(res.ClearNominated, pi.Pod)
		}
	}
	return res, nil
}

// eligible says whether pod may preempt: not with preemptionPolicy Never,
// and not while pods it preempted on its nominated node are still
// terminating (unless that node no longer fits it at all).
func (pl *DefaultPreemption) eligible(pod *v1.Pod, nominatedStatus *framework.Status) (bool, string) {
	if p := pod.Spec.PreemptionPolicy; p != nil && *p == v1.PreemptNever {
		return false, msgPolicyNever
	}
	nom := pod.Status.NominatedNodeName
	if nom == "" {
		return true, ""
	}
	if nominatedStatus.Code() == framework.UnschedulableAndUnresolvable {
		return true, ""
	}
	if ni := pl.h.Snapshot().Get(nom); ni != nil {
		prio := framework.PodPriority(pod)
		for _, p := range ni.Pods {
			if framework.PodPriority(p.Pod) < prio && terminatingByPreemption(p.Pod) {
				return false, msgTerminatingVictim
			}
		}
	}
	return true, ""
}

func terminatingByPreemption(p *v1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler
		}
	}
	return false
}

func (pl *DefaultPreemption) numCandidates(numNodes int32) int32 {
	n := numNodes * pl.minPercentage / 100
	n = max(n, pl.minAbsolute)
	return min(n, numNodes)
}

// dryRun tries each potential node, recording failures in statuses, until
// enough candidates are found.
func (pl *DefaultPreemption) dryRun(ctx context.Context, state *framework.CycleState, pod *v1.Pod, potential []*framework.NodeInfo, pdbs []*policyv1.PodDisruptionBudget, statuses *framework.NodeToStatus) ([]*candidate, error) {
	want := int(pl.numCandidates(int32(len(potential))))
	var nonViolating, violating []*candidate
	var firstErr error
	for _, ni := range potential {
		niCopy, stateCopy := ni.Clone(), state.Clone()
		victims, violations, s := pl.selectVictimsOnNode(ctx, stateCopy, pod, niCopy, pdbs)
		if s.IsSuccess() && len(victims) > 0 {
			c := &candidate{node: ni.Node().Name, victims: victims, numPDBViolations: violations}
			if violations == 0 {
				nonViolating = append(nonViolating, c)
			} else {
				violating = append(violating, c)
			}
			if len(nonViolating) > 0 && len(nonViolating)+len(violating) >= want {
				break
			}
			continue
		}
		if s.IsSuccess() {
			s = framework.AsStatus(fmt.Errorf("expected at least one victim pod on node %q", ni.Node().Name))
		}
		if s.Code() == framework.Error && firstErr == nil {
			firstErr = s.AsError()
		}
		statuses.Set(ni.Node().Name, s)
	}
	return append(nonViolating, violating...), firstErr
}

// selectVictimsOnNode removes every lower-priority pod from the node and
// checks the pod then fits; it then puts back as many as it can, most
// important first (those whose eviction would violate a PDB before the
// others), and returns the rest as victims, most important first.
func (pl *DefaultPreemption) selectVictimsOnNode(ctx context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo, pdbs []*policyv1.PodDisruptionBudget) ([]*v1.Pod, int, *framework.Status) {
	remove := func(pi *framework.PodInfo) error {
		if err := ni.RemovePod(pi.Pod); err != nil {
			return err
		}
		return pl.h.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, ni).AsError()
	}
	add := func(pi *framework.PodInfo) error {
		ni.AddPodInfo(pi)
		return pl.h.RunPreFilterExtensionAddPod(ctx, state, pod, pi, ni).AsError()
	}
	prio := framework.PodPriority(pod)
	var potential []*framework.PodInfo
	for _, pi := range append([]*framework.PodInfo(nil), ni.Pods...) {
		if framework.PodPriority(pi.Pod) < prio {
			potential = append(potential, pi)
			if err := remove(pi); err != nil {
				return nil, 0, framework.AsStatus(err)
			}
		}
	}
	if len(potential) == 0 {
		return nil, 0, framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNoVictims)
	}
	if s := pl.h.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni); !s.IsSuccess() {
		return nil, 0, s
	}
	sort.SliceStable(potential, func(i, j int) bool { return framework.MoreImportantPod(potential[i].Pod, potential[j].Pod) })
	violatingPods, nonViolatingPods := filterPodsWithPDBViolation(potential, pdbs)
	var victims []*v1.Pod
	reprieve := func(pi *framework.PodInfo) (bool, error) {
		if err := add(pi); err != nil {
			return false, err
		}
		fits := pl.h.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni).IsSuccess()
		if !fits {
			if err := remove(pi); err != nil {
				return false, err
			}
			victims = append(victims, pi.Pod)
		}
		return fits, nil
	}
	violations := 0
	for _, pi := range violatingPods {
		fits, err := reprieve(pi)
		if err != nil {
			return nil, 0, framework.AsStatus(err)
		}
		if !fits {
			violations++
		}
	}
	for _, pi := range nonViolatingPods {
		if _, err := reprieve(pi); err != nil {
			return nil, 0, framework.AsStatus(err)
		}
	}
	if len(violatingPods) > 0 && len(nonViolatingPods) > 0 {
		sort.SliceStable(victims, func(i, j int) bool { return framework.MoreImportantPod(victims[i], victims[j]) })
	}
	return victims, violations, nil
}

// filterPodsWithPDBViolation splits pods into those whose eviction would
// exceed a matching PDB's disruptionsAllowed (counting earlier pods of the
// list against the budget) and the others.
func filterPodsWithPDBViolation(pods []*framework.PodInfo, pdbs []*policyv1.PodDisruptionBudget) (violating, nonViolating []*framework.PodInfo) {
	allowed := make([]int32, len(pdbs))
	for i, p := range pdbs {
		allowed[i] = p.Status.DisruptionsAllowed
	}
	for _, pi := range pods {
		pod := pi.Pod
		violated := false
		if len(pod.Labels) > 0 {
			for i, pdb := range pdbs {
				if pdb.Namespace != pod.Namespace {
					continue
				}
				sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
					continue
				}
				if _, disrupted := pdb.Status.DisruptedPods[pod.Name]; disrupted {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					violated = true
				}
			}
		}
		if violated {
			violating = append(violating, pi)
		} else {
			nonViolating = append(nonViolating, pi)
		}
	}
	return violating, nonViolating
}

// pickOne chooses among candidates by upstream's criteria, in order:
// fewest PDB violations, lowest highest-victim priority, lowest sum of
// victim priorities, fewest victims, latest earliest start time among the
// highest-priority victims; then the first.
func pickOne(cs []*candidate) *candidate {
	if len(cs) == 1 {
		return cs[0]
	}
	scores := []func(c *candidate) int64{
		func(c *candidate) int64 { return -int64(c.numPDBViolations) },
		func(c *candidate) int64 { return -int64(framework.PodPriority(c.victims[0])) },
		func(c *candidate) int64 {
			var sum int64
			for _, p := range c.victims {
				sum += int64(framework.PodPriority(p)) + int64(math.MaxInt32) + 1
			}
			return -sum
		},
		func(c *candidate) int64 { return -int64(len(c.victims)) },
		func(c *candidate) int64 {
			t := earliestStartTime(c.victims)
			if t == nil {
				return math.MinInt64
			}
			return t.UnixNano()
		},
	}
	for _, f := range scores {
		best := int64(math.MinInt64)
		var selected []*candidate
		for _, c := range cs {
			s := f(c)
			if s > best {
				best, selected = s, selected[:0]
			}
			if s == best {
				selected = append(selected, c)
			}
		}
		if len(selected) == 1 {
			return selected[0]
		}
		cs = selected
	}
	return cs[0]
}

// earliestStartTime is the earliest start time among the victims with the
// highest priority (victims are sorted most important first).
func earliestStartTime(victims []*v1.Pod) *metav1.Time {
	if len(victims) == 0 {
		return nil
	}
	top := framework.PodPriority(victims[0])
	t := framework.PodStartTime(victims[0])
	for _, p := range victims[1:] {
		if framework.PodPriority(p) != top {
			continue
		}
		if st := framework.PodStartTime(p); st.Before(&t) {
			t = st
		}
	}
	return &t
}
