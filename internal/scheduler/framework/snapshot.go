package framework

import (
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Snapshot is the cluster as one scheduling cycle sees it: the nodes in the
// order they are tried, the pods on each, and the other objects plugins
// read. A cycle never changes it (preemption works on NodeInfo clones).
type Snapshot struct {
	nodes                    []*NodeInfo
	byName                   map[string]*NodeInfo
	withAffinity             []*NodeInfo
	withRequiredAntiAffinity []*NodeInfo
	usedPVCs                 sets.Set[string]
	imageNumNodes            map[string]int

	// NamespaceLabels holds each namespace's labels, for namespace
	// selectors in pod affinity terms.
	NamespaceLabels map[string]labels.Set
	// PVC looks a claim up by namespace/name, for ReadWriteOncePod checks
	// (nil: no claims are known). It reads the scheduler's informer, as
	// upstream's plugins read their listers: claims change too often (a
	// binding writes each claim twice) to be copied at every cycle.
	PVC func(key string) (*v1.PersistentVolumeClaim, bool)
	// PDBs are the PodDisruptionBudgets preemption tries not to violate.
	PDBs []*policyv1.PodDisruptionBudget
	// NominatedPods maps a node name to the pending pods nominated to it
	// (by preemption) that are not bound yet: filters count those of equal
	// or higher priority as if they were there.
	NominatedPods map[string][]*PodInfo
	// Workloads, when set, gives PodTopologySpread its default
	// constraints.
	Workloads WorkloadLister
}

// NewSnapshot builds a snapshot from nodes and the pods bound to them (pods
// with an unknown or empty spec.nodeName are left out), in nodes' order.
func NewSnapshot(pods []*v1.Pod, nodes []*v1.Node) *Snapshot {
	infos := make(map[string]*NodeInfo, len(nodes))
	list := make([]*NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		ni := NewNodeInfo()
		ni.SetNode(n)
		infos[n.Name] = ni
		list = append(list, ni)
	}
	for _, p := range pods {
		if ni := infos[p.Spec.NodeName]; ni != nil {
			ni.AddPod(p)
		}
	}
	s := &Snapshot{}
	s.SetNodes(list, nil)
	return s
}

// SetNodes replaces the node list (only nodes whose Node() is set are
// kept), recomputing the indexes. imageNumNodes maps a normalized image
// name to how many nodes have it; nil computes it from the list.
func (s *Snapshot) SetNodes(list []*NodeInfo, imageNumNodes map[string]int) {
	s.nodes = s.nodes[:0]
	s.withAffinity = s.withAffinity[:0]
	s.withRequiredAntiAffinity = s.withRequiredAntiAffinity[:0]
	s.byName = make(map[string]*NodeInfo, len(list))
	s.usedPVCs = sets.New[string]()
	compute := imageNumNodes == nil
	if compute {
		imageNumNodes = map[string]int{}
	}
	for _, ni := range list {
		if ni.Node() == nil {
			continue
		}
		s.nodes = append(s.nodes, ni)
		s.byName[ni.Node().Name] = ni
		if len(ni.PodsWithAffinity) > 0 {
			s.withAffinity = append(s.withAffinity, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			s.withRequiredAntiAffinity = append(s.withRequiredAntiAffinity, ni)
		}
		for k := range ni.PVCRefCounts {
			s.usedPVCs.Insert(k)
		}
		if compute {
			for name := range ni.ImageSizes {
				imageNumNodes[name]++
			}
		}
	}
	s.imageNumNodes = imageNumNodes
}

// List returns the nodes in scheduling order.
func (s *Snapshot) List() []*NodeInfo { return s.nodes }

// NumNodes is len(List()).
func (s *Snapshot) NumNodes() int { return len(s.nodes) }

// Get returns the named node, or nil.
func (s *Snapshot) Get(name string) *NodeInfo { return s.byName[name] }

// HavePodsWithAffinityList returns the nodes with at least one pod that has
// pod (anti-)affinity.
func (s *Snapshot) HavePodsWithAffinityList() []*NodeInfo { return s.withAffinity }

// HavePodsWithRequiredAntiAffinityList returns the nodes with at least one
// pod that has required pod anti-affinity.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() []*NodeInfo {
	return s.withRequiredAntiAffinity
}

// IsPVCUsedByPods reports whether a bound pod uses the claim
// (namespace/name).
func (s *Snapshot) IsPVCUsedByPods(key string) bool { return s.usedPVCs.Has(key) }

// ImageNumNodes returns on how many nodes the normalized image is present.
func (s *Snapshot) ImageNumNodes(image string) int { return s.imageNumNodes[image] }

// NamespaceLabelsOf returns the labels of namespace ns (nil if unknown).
func (s *Snapshot) NamespaceLabelsOf(ns string) labels.Set { return s.NamespaceLabels[ns] }

// WorkloadLister tells which Services and controllers group pods together,
// for PodTopologySpread's default constraints.
type WorkloadLister interface {
	// Services returns the Services of a namespace.
	Services(namespace string) []*v1.Service
	// ControllerSelector returns the pod selector of a controller (a
	// ReplicaSet, StatefulSet or ReplicationController) named by an owner
	// reference, or nil.
	ControllerSelector(namespace string, owner *metav1.OwnerReference) labels.Selector
}
