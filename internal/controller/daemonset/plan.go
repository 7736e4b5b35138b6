package daemonset

import (
	"slices"
	"sort"
	"time"

	"plainkube.dev/plainkube/internal/api/podutil"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Taint keys the default DaemonSet tolerations name (upstream's
// k8s.io/api/core/v1 well-known taints).
const (
	TaintNodeNotReady           = "node.kubernetes.io/not-ready"
	TaintNodeUnreachable        = "node.kubernetes.io/unreachable"
	TaintNodeDiskPressure       = "node.kubernetes.io/disk-pressure"
	TaintNodeMemoryPressure     = "node.kubernetes.io/memory-pressure"
	TaintNodePIDPressure        = "node.kubernetes.io/pid-pressure"
	TaintNodeUnschedulable      = "node.kubernetes.io/unschedulable"
	TaintNodeNetworkUnavailable = "node.kubernetes.io/network-unavailable"
)

// DefaultTolerations are the tolerations upstream adds to every daemon pod:
// daemons survive a node going not-ready or unreachable, and run on nodes
// under resource pressure or cordoned; host-network daemons also run where
// the pod network is not up yet.
func DefaultTolerations(hostNetwork bool) []corev1.Toleration {
	t := []corev1.Toleration{
		{Key: TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		t = append(t, corev1.Toleration{Key: TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule})
	}
	return t
}

// AddDefaultTolerations adds DefaultTolerations to spec, each unless spec
// already has a toleration with the same key, operator and effect.
func AddDefaultTolerations(spec *corev1.PodSpec) {
	for _, d := range DefaultTolerations(spec.HostNetwork) {
		found := false
		for _, t := range spec.Tolerations {
			if t.Key == d.Key && t.Operator == d.Operator && t.Effect == d.Effect {
				found = true
				break
			}
		}
		if !found {
			spec.Tolerations = append(spec.Tolerations, d)
		}
	}
}

// PinToNode sets spec's required node affinity to the single term
// metadata.name In [node], as upstream does, keeping the other affinities.
func PinToNode(spec *corev1.PodSpec, node string) {
	term := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
		Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}
}

// TargetNode is the node pod runs on or is pinned to ("" if neither).
func TargetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for _, t := range terms {
		for _, r := range t.MatchFields {
			if r.Key == "metadata.name" && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// ShouldRun says whether a daemon pod with spec should be started on node
// (shouldRun) and whether one already there may stay (shouldContinue):
// spec.nodeName, if set, must name the node; the nodeSelector and required
// node affinity must match; and every NoSchedule / NoExecute taint must be
// tolerated — only untolerated NoExecute taints evict a running pod. spec
// should already carry the default tolerations.
func ShouldRun(node *corev1.Node, spec *corev1.PodSpec) (shouldRun, shouldContinue bool) {
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return false, false
	}
	pod := &corev1.Pod{Spec: *spec}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return false, false
	}
	_, untoleratedNoExecute := v1helper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, spec.Tolerations,
		func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }, false)
	if untoleratedNoExecute {
		return false, false
	}
	_, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, spec.Tolerations,
		func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoSchedule }, false)
	return !untolerated, true
}

// NodePlan is what to do on one node.
type NodePlan struct {
	Create bool
	Delete []*corev1.Pod
}

// PlanNode is upstream's podsShouldBeOnNode: pods are the daemon pods
// targeting the node (any state). A node that should run the daemon and
// has no pod gets one; failed pods are deleted (to be replaced); of several
// live pods the oldest updated pod and the oldest old pod stay (the rolling
// update removes the old one once the updated one is available); pods on a node that may not keep them are
// deleted.
func PlanNode(shouldRun, shouldContinue bool, pods []*corev1.Pod, hash string) NodePlan {
	var p NodePlan
	switch {
	case shouldRun && len(pods) == 0:
		p.Create = true
	case shouldContinue:
		var live []*corev1.Pod
		for _, pod := range pods {
			if pod.DeletionTimestamp != nil {
				continue
			}
			if pod.Status.Phase == corev1.PodFailed {
				p.Delete = append(p.Delete, pod)
				continue
			}
			live = append(live, pod)
		}
		if shouldRun && len(live) == 0 && len(p.Delete) > 0 {
			// Replaced after the failed pod is gone; nothing more now.
			return p
		}
		if len(live) > 1 {
			sortOldestFirst(live)
			var keepNew, keepOld bool
			for _, pod := range live {
				updated := pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash
				switch {
				case updated && !keepNew:
					keepNew = true
				case !updated && !keepOld:
					keepOld = true
				default:
					p.Delete = append(p.Delete, pod)
				}
			}
		}
	default:
		for _, pod := range pods {
			if pod.DeletionTimestamp == nil {
				p.Delete = append(p.Delete, pod)
			}
		}
	}
	return p
}

func sortOldestFirst(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		ti, tj := pods[i].CreationTimestamp, pods[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return pods[i].Name < pods[j].Name
	})
}

// IsAvailable: pod is ready and has been for minReadySeconds at now.
func IsAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return pod.DeletionTimestamp == nil && podutil.IsAvailable(pod, minReadySeconds, now)
}

// MaxUnavailableSurge are the rolling update's bounds scaled to desired
// nodes (rounding up), as upstream: both zero means maxUnavailable 1.
func MaxUnavailableSurge(ds *appsv1.DaemonSet, desired int) (maxUnavailable, maxSurge int) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	mu := intstr.FromInt32(1)
	ms := intstr.FromInt32(0)
	if ru != nil {
		if ru.MaxUnavailable != nil {
			mu = *ru.MaxUnavailable
		}
		if ru.MaxSurge != nil {
			ms = *ru.MaxSurge
		}
	}
	maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(&mu, desired, true)
	maxSurge, _ = intstr.GetScaledValueFromIntOrPercent(&ms, desired, true)
	if maxUnavailable == 0 && maxSurge == 0 {
		maxUnavailable = 1
	}
	return maxUnavailable, maxSurge
}

// NodePods are the live (not being deleted) daemon pods of a node that
// should run the daemon, split by revision, for the rolling update.
type NodePods struct {
	Node string
	Old  []*corev1.Pod
	New  []*corev1.Pod
}

// RollingPlan is the rolling update's step.
type RollingPlan struct {
	Delete []*corev1.Pod
	// SurgeNodes get an updated pod next to their old one.
	SurgeNodes []string
}

// PlanRollingUpdate is upstream's rollingUpdate. Without surge, old pods
// that are not available are replaced at once, and available ones only
// while fewer than maxUnavailable nodes lack an available pod. With surge,
// a node with an old available pod first gets an updated pod (at most
// maxSurge nodes at a time); the old pod goes once the updated one is
// available; an old pod that is not available is replaced at once. nodes
// should be in a stable order (the caller sorts by name).
func PlanRollingUpdate(nodes []NodePods, maxUnavailable, maxSurge int, minReadySeconds int32, now time.Time) RollingPlan {
	var plan RollingPlan
	avail := func(ps []*corev1.Pod) bool {
		for _, p := range ps {
			if IsAvailable(p, minReadySeconds, now) {
				return true
			}
		}
		return false
	}
	if maxSurge == 0 {
		unavailable := 0
		var candidates []*corev1.Pod
		for _, n := range nodes {
			if len(n.New) > 0 {
				if !avail(n.New) {
					unavailable++
				} else {
					plan.Delete = append(plan.Delete, n.Old...)
				}
				continue
			}
			if len(n.Old) == 0 {
				unavailable++ // a pod is about to be created
				continue
			}
			if !avail(n.Old) {
				unavailable++
				plan.Delete = append(plan.Delete, n.Old...)
				continue
			}
			candidates = append(candidates, n.Old...)
		}
		for _, p := range candidates {
			if unavailable >= maxUnavailable {
				break
			}
			unavailable++
			plan.Delete = append(plan.Delete, p)
		}
		return plan
	}
	surging := 0
	for _, n := range nodes {
		if len(n.Old) > 0 && len(n.New) > 0 && !avail(n.New) {
			surging++
		}
	}
	for _, n := range nodes {
		switch {
		case len(n.Old) == 0:
		case len(n.New) > 0:
			if avail(n.New) {
				plan.Delete = append(plan.Delete, n.Old...)
			}
		case !avail(n.Old):
			plan.Delete = append(plan.Delete, n.Old...)
		case surging < maxSurge:
			surging++
			plan.SurgeNodes = append(plan.SurgeNodes, n.Node)
		}
	}
	return plan
}

// State is what one reconcile of a DaemonSet plans from: the DaemonSet,
// its current revision's hash, the pods it controls (claims made), the
// nodes, and whether its expectations allow managing pods.
type State struct {
	DaemonSet *appsv1.DaemonSet
	Hash      string
	Pods      []*corev1.Pod
	Nodes     []*corev1.Node
	Satisfied bool
	Now       time.Time
}

// Plan is what one reconcile does: create a pod on each of Create's nodes
// and delete the Delete pods (when Manage), write the status computed from
// Nodes (sorted by name), Runs (whether the daemon pod should run on each)
// and ByNode (the pods by target node), and look again after RequeueAfter.
type Plan struct {
	Manage       bool
	Create       []string
	Delete       []*corev1.Pod
	Nodes        []*corev1.Node
	Runs         map[string]bool
	ByNode       map[string][]*corev1.Pod
	RequeueAfter time.Duration
}

// plan decides, node by node, whether the daemon pod should run there and
// so whether to create one or which pods to delete (pods on nodes that no
// longer exist go too); then, unless the strategy is OnDelete, the rolling
// update picks the old pods to replace and the nodes to surge on.
func plan(st State) Plan {
	ds, hash := st.DaemonSet, st.Hash
	nodes := append([]*corev1.Node(nil), st.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	byNode := map[string][]*corev1.Pod{}
	for _, p := range st.Pods {
		if n := TargetNode(p); n != "" {
			byNode[n] = append(byNode[n], p)
		}
	}
	spec := ds.Spec.Template.Spec.DeepCopy()
	AddDefaultTolerations(spec)
	p := Plan{Nodes: nodes, Runs: map[string]bool{}, ByNode: byNode}
	var del []*corev1.Pod
	var rolling []NodePods
	for _, node := range nodes {
		shouldRun, shouldContinue := ShouldRun(node, spec)
		p.Runs[node.Name] = shouldRun
		np := PlanNode(shouldRun, shouldContinue, byNode[node.Name], hash)
		if np.Create {
			p.Create = append(p.Create, node.Name)
		}
		del = append(del, np.Delete...)
		if shouldContinue && shouldRun {
			rolling = append(rolling, rollingPods(node.Name, byNode[node.Name], np.Delete, hash))
		}
	}
	// Pods pinned to nodes that no longer exist go too.
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.Name] = true
	}
	for n, ps := range byNode {
		if known[n] {
			continue
		}
		for _, p := range ps {
			if p.DeletionTimestamp == nil {
				del = append(del, p)
			}
		}
	}
	desired := 0
	for _, r := range p.Runs {
		if r {
			desired++
		}
	}
	if st.Satisfied {
		p.Manage = true
		if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
			mu, ms := MaxUnavailableSurge(ds, desired)
			rp := PlanRollingUpdate(rolling, mu, ms, ds.Spec.MinReadySeconds, st.Now)
			del = append(del, rp.Delete...)
			p.Create = append(p.Create, rp.SurgeNodes...)
		}
		p.Delete = dedupe(del)
	} else {
		p.Create = nil
	}
	if ds.Spec.MinReadySeconds > 0 {
		// Ready pods become available later: look again then.
		p.RequeueAfter = (time.Duration(ds.Spec.MinReadySeconds) + 1) * time.Second
	}
	return p
}

// rollingPods are a node's pods the rolling update looks at: not being
// deleted, not failed, not already to be deleted, split into new and old
// by revision.
func rollingPods(node string, pods, deleting []*corev1.Pod, hash string) NodePods {
	np := NodePods{Node: node}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || slices.Contains(deleting, p) || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
			np.New = append(np.New, p)
		} else {
			np.Old = append(np.Old, p)
		}
	}
	return np
}

func dedupe(pods []*corev1.Pod) []*corev1.Pod {
	seen := map[types.UID]bool{}
	var out []*corev1.Pod
	for _, p := range pods {
		if !seen[p.UID] {
			seen[p.UID] = true
			out = append(out, p)
		}
	}
	return out
}
