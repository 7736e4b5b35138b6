package st

import (
	"fmt"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Base is the creation time of the first pod; each later pod is one
// second younger, so that creation order is stable.
var Base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var seq atomic.Int64

// NodeWrapper builds a node.
type NodeWrapper struct{ v1.Node }

// Node returns a Ready node with 32 pods of capacity and nothing else.
func Node(name string) *NodeWrapper {
	n := &NodeWrapper{v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name), Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{v1.ResourcePods: resource.MustParse("32")},
			Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("32")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}}
	return n
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *v1.Node { return &n.Node }

// Capacity sets capacity and allocatable: cpu, memory (empty skips).
func (n *NodeWrapper) Capacity(cpu, mem string) *NodeWrapper {
	if cpu != "" {
		n.Res(v1.ResourceCPU, cpu)
	}
	if mem != "" {
		n.Res(v1.ResourceMemory, mem)
	}
	return n
}

// Res sets one resource's capacity and allocatable.
func (n *NodeWrapper) Res(name v1.ResourceName, q string) *NodeWrapper {
	n.Status.Capacity[name] = resource.MustParse(q)
	n.Status.Allocatable[name] = resource.MustParse(q)
	return n
}

// Label sets a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper {
	n.Labels[k] = v
	return n
}

// Zone sets the zone label.
func (n *NodeWrapper) Zone(z string) *NodeWrapper { return n.Label(v1.LabelTopologyZone, z) }

// Taint adds a taint.
func (n *NodeWrapper) Taint(k, v string, e v1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: k, Value: v, Effect: e})
	return n
}

// Unschedulable cordons the node.
func (n *NodeWrapper) Unschedulable() *NodeWrapper {
	n.Spec.Unschedulable = true
	return n
}

// Image adds an image of size MiB.
func (n *NodeWrapper) Image(name string, mib int64) *NodeWrapper {
	n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: []string{name}, SizeBytes: mib * 1024 * 1024})
	return n
}

// PodWrapper builds a pod.
type PodWrapper struct{ v1.Pod }

// Pod returns a pending pod in namespace "default" with one container.
func Pod(name string) *PodWrapper {
	i := seq.Add(1)
	return &PodWrapper{v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%s-%d", name, i)),
			CreationTimestamp: metav1.NewTime(Base.Add(time.Duration(i) * time.Second)),
		},
		Spec: v1.PodSpec{
			Containers:    []v1.Container{{Name: "c", Image: "registry.example/app"}},
			SchedulerName: v1.DefaultSchedulerName,
		},
	}}
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *v1.Pod { return &p.Pod }

// Namespace sets the namespace.
func (p *PodWrapper) Namespace(ns string) *PodWrapper {
	p.Pod.Namespace = ns
	return p
}

// Req sets the first container's requests (empty skips).
func (p *PodWrapper) Req(cpu, mem string) *PodWrapper {
	c := &p.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = v1.ResourceList{}
	}
	if cpu != "" {
		c.Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return p
}

// ReqRes sets one request of the first container.
func (p *PodWrapper) ReqRes(name v1.ResourceName, q string) *PodWrapper {
	c := &p.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = v1.ResourceList{}
	}
	c.Resources.Requests[name] = resource.MustParse(q)
	return p
}

// InitReq adds an init container with requests.
func (p *PodWrapper) InitReq(cpu, mem string) *PodWrapper {
	c := v1.Container{Name: fmt.Sprintf("init%d", len(p.Spec.InitContainers)), Image: "busybox", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}}}
	if cpu != "" {
		c.Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(mem)
	}
	p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	return p
}

// Overhead sets the pod overhead.
func (p *PodWrapper) Overhead(cpu, mem string) *PodWrapper {
	p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	return p
}

// Image sets the container image.
func (p *PodWrapper) Image(img string) *PodWrapper {
	p.Spec.Containers[0].Image = img
	return p
}

// Label sets a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// Node binds the pod to a node.
func (p *PodWrapper) Node(name string) *PodWrapper {
	p.Spec.NodeName = name
	return p
}

// NodeSelector sets a nodeSelector entry.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

func (p *PodWrapper) affinity() *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

// NodeAffinityIn requires a node label in values.
func (p *PodWrapper) NodeAffinityIn(key string, values ...string) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{}}}
	}
	t := &a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	t.MatchExpressions = append(t.MatchExpressions, v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpIn, Values: values})
	return p
}

// PreferNode adds a preferred node affinity term.
func (p *PodWrapper) PreferNode(weight int32, key string, values ...string) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, v1.PreferredSchedulingTerm{
		Weight:     weight,
		Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}}},
	})
	return p
}

func term(topologyKey, labelKey, labelValue string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{
		TopologyKey:   topologyKey,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelKey: labelValue}},
	}
}

// PodAffinity requires a pod labelled k=v in the same topologyKey domain.
func (p *PodWrapper) PodAffinity(topologyKey, k, v string) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(topologyKey, k, v))
	return p
}

// PodAntiAffinity forbids pods labelled k=v in the same domain.
func (p *PodWrapper) PodAntiAffinity(topologyKey, k, v string) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(topologyKey, k, v))
	return p
}

// PreferPodAffinity prefers (weight) domains with pods labelled k=v.
func (p *PodWrapper) PreferPodAffinity(weight int32, topologyKey, k, v string) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(topologyKey, k, v)})
	return p
}

// PreferPodAntiAffinity avoids (weight) domains with pods labelled k=v.
func (p *PodWrapper) PreferPodAntiAffinity(weight int32, topologyKey, k, v string) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(topologyKey, k, v)})
	return p
}

// Toleration adds a toleration (Equal when value is set, else Exists).
func (p *PodWrapper) Toleration(k, v string, e v1.TaintEffect) *PodWrapper {
	t := v1.Toleration{Key: k, Value: v, Effect: e, Operator: v1.TolerationOpEqual}
	if v == "" {
		t.Operator = v1.TolerationOpExists
	}
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

// HostPort adds a container port bound to a host port.
func (p *PodWrapper) HostPort(port int32, proto v1.Protocol, hostIP string) *PodWrapper {
	c := &p.Spec.Containers[0]
	c.Ports = append(c.Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: proto, HostIP: hostIP})
	return p
}

// Priority sets spec.priority.
func (p *PodWrapper) Priority(v int32) *PodWrapper {
	p.Spec.Priority = &v
	return p
}

// PreemptNever sets preemptionPolicy Never.
func (p *PodWrapper) PreemptNever() *PodWrapper {
	n := v1.PreemptNever
	p.Spec.PreemptionPolicy = &n
	return p
}

// Spread adds a topology spread constraint over pods labelled k=v.
func (p *PodWrapper) Spread(maxSkew int32, topologyKey string, action v1.UnsatisfiableConstraintAction, k, v string) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: action,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
	})
	return p
}

// MinDomains sets minDomains on the last spread constraint.
func (p *PodWrapper) MinDomains(n int32) *PodWrapper {
	p.Spec.TopologySpreadConstraints[len(p.Spec.TopologySpreadConstraints)-1].MinDomains = &n
	return p
}

// NodeTaintsPolicy sets nodeTaintsPolicy on the last spread constraint.
func (p *PodWrapper) NodeTaintsPolicy(v v1.NodeInclusionPolicy) *PodWrapper {
	p.Spec.TopologySpreadConstraints[len(p.Spec.TopologySpreadConstraints)-1].NodeTaintsPolicy = &v
	return p
}

// NodeAffinityPolicy sets nodeAffinityPolicy on the last spread constraint.
func (p *PodWrapper) NodeAffinityPolicy(v v1.NodeInclusionPolicy) *PodWrapper {
	p.Spec.TopologySpreadConstraints[len(p.Spec.TopologySpreadConstraints)-1].NodeAffinityPolicy = &v
	return p
}

// NominatedNode sets status.nominatedNodeName.
func (p *PodWrapper) NominatedNode(n string) *PodWrapper {
	p.Status.NominatedNodeName = n
	return p
}

// StartTime sets status.startTime.
func (p *PodWrapper) StartTime(t time.Time) *PodWrapper {
	mt := metav1.NewTime(t)
	p.Status.StartTime = &mt
	return p
}

// Volume adds a volume.
func (p *PodWrapper) Volume(v v1.Volume) *PodWrapper {
	p.Spec.Volumes = append(p.Spec.Volumes, v)
	return p
}

// PVC adds a volume using the named claim.
func (p *PodWrapper) PVC(claim string) *PodWrapper {
	return p.Volume(v1.Volume{Name: claim, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
}
