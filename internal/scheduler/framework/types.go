package framework

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// PodInfo is a pod with what scheduling needs from it pre-computed: its
// parsed inter-pod (anti-)affinity terms and its resource requests.
// A PodInfo is immutable once made.
type PodInfo struct {
	Pod *v1.Pod

	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm

	// Requests is what the pod requests; NonZeroRequests the same with
	// upstream's defaults for containers that request no CPU or memory
	// (only its MilliCPU and Memory are meaningful).
	Requests        *Resource
	NonZeroRequests *Resource

	// ParseErr is the first invalid label selector found in the pod's
	// affinity terms; such a term matches nothing.
	ParseErr error
}

// NewPodInfo parses pod.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod}
	if a := pod.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			pi.RequiredAffinityTerms = pi.terms(pa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAffinityTerms = pi.weightedTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			pi.RequiredAntiAffinityTerms = pi.terms(pa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAntiAffinityTerms = pi.weightedTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	pi.Requests = PodRequests(pod, false)
	nz := PodRequests(pod, true)
	pi.NonZeroRequests = &Resource{MilliCPU: nz.MilliCPU, Memory: nz.Memory}
	return pi
}

func (pi *PodInfo) terms(in []v1.PodAffinityTerm) []AffinityTerm {
	if len(in) == 0 {
		return nil
	}
	out := make([]AffinityTerm, 0, len(in))
	for i := range in {
		t, err := NewAffinityTerm(pi.Pod, &in[i])
		if err != nil && pi.ParseErr == nil {
			pi.ParseErr = err
		}
		out = append(out, t)
	}
	return out
}

func (pi *PodInfo) weightedTerms(in []v1.WeightedPodAffinityTerm) []WeightedAffinityTerm {
	if len(in) == 0 {
		return nil
	}
	out := make([]WeightedAffinityTerm, 0, len(in))
	for i := range in {
		t, err := NewAffinityTerm(pi.Pod, &in[i].PodAffinityTerm)
		if err != nil && pi.ParseErr == nil {
			pi.ParseErr = err
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: in[i].Weight})
	}
	return out
}

// HasAffinity reports any pod (anti-)affinity, required or preferred.
func (pi *PodInfo) HasAffinity() bool {
	a := pi.Pod.Spec.Affinity
	return a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)
}

// Key is namespace/name.
func (pi *PodInfo) Key() string { return pi.Pod.Namespace + "/" + pi.Pod.Name }

// AffinityTerm is a parsed v1.PodAffinityTerm: the namespaces it names
// (the pod's own when it names none and has no namespace selector), its
// label selector, topology key and namespace selector.
type AffinityTerm struct {
	Namespaces        sets.Set[string]
	Selector          labels.Selector
	TopologyKey       string
	NamespaceSelector labels.Selector
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// NewAffinityTerm parses term, written in pod. An invalid selector is
// returned as labels.Nothing() along with the error.
func NewAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm) (AffinityTerm, error) {
	var firstErr error
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		sel, firstErr = labels.Nothing(), err
	}
	ns := sets.New(term.Namespaces...)
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		ns.Insert(pod.Namespace)
	}
	nsSel := labels.Nothing()
	if term.NamespaceSelector != nil {
		if nsSel, err = metav1.LabelSelectorAsSelector(term.NamespaceSelector); err != nil {
			nsSel = labels.Nothing()
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return AffinityTerm{Namespaces: ns, Selector: sel, TopologyKey: term.TopologyKey, NamespaceSelector: nsSel}, firstErr
}

// Matches reports whether pod is selected by the term: it is in one of
// the term's namespaces (or its namespace, labelled nsLabels, matches the
// namespace selector), and its labels match the selector.
func (t *AffinityTerm) Matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if t.Namespaces.Has(pod.Namespace) || t.NamespaceSelector.Matches(nsLabels) {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

// PodPriority is spec.priority, 0 when unset.
func PodPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// ProtocolPort is a protocol and port.
type ProtocolPort struct {
	Protocol string
	Port     int32
}

// DefaultBindAllHostIP is the host IP of a hostPort that names none.
const DefaultBindAllHostIP = "0.0.0.0"

// HostPortInfo is the host ports in use on a node: host IP -> protocol and
// port -> count of pods using it.
type HostPortInfo map[string]map[ProtocolPort]int

func sanitizeHostPort(ip, protocol string) (string, string) {
	if ip == "" {
		ip = DefaultBindAllHostIP
	}
	if protocol == "" {
		protocol = string(v1.ProtocolTCP)
	}
	return ip, protocol
}

// Add marks a host port as used.
func (h HostPortInfo) Add(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = sanitizeHostPort(ip, protocol)
	m := h[ip]
	if m == nil {
		m = map[ProtocolPort]int{}
		h[ip] = m
	}
	m[ProtocolPort{protocol, port}]++
}

// Remove releases a host port.
func (h HostPortInfo) Remove(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = sanitizeHostPort(ip, protocol)
	m := h[ip]
	pp := ProtocolPort{protocol, port}
	if m[pp] <= 1 {
		delete(m, pp)
	} else {
		m[pp]--
	}
	if len(m) == 0 {
		delete(h, ip)
	}
}

// CheckConflict reports whether binding ip:port/protocol would clash with a
// port in use: 0.0.0.0 clashes with the same port on any IP, a specific IP
// with the same IP or 0.0.0.0.
func (h HostPortInfo) CheckConflict(ip, protocol string, port int32) bool {
	if port <= 0 {
		return false
	}
	ip, protocol = sanitizeHostPort(ip, protocol)
	pp := ProtocolPort{protocol, port}
	if ip == DefaultBindAllHostIP {
		for _, m := range h {
			if m[pp] > 0 {
				return true
			}
		}
		return false
	}
	return h[DefaultBindAllHostIP][pp] > 0 || h[ip][pp] > 0
}

// Clone returns a deep copy.
func (h HostPortInfo) Clone() HostPortInfo {
	c := make(HostPortInfo, len(h))
	for ip, m := range h {
		cm := make(map[ProtocolPort]int, len(m))
		for k, v := range m {
			cm[k] = v
		}
		c[ip] = cm
	}
	return c
}

// HostPorts returns the container ports of pod that bind a host port: those
// of its containers and of its restartable (sidecar) init containers.
func HostPorts(pod *v1.Pod) []v1.ContainerPort {
	var out []v1.ContainerPort
	add := func(cs []v1.Container, sidecarsOnly bool) {
		for i := range cs {
			if sidecarsOnly && (cs[i].RestartPolicy == nil || *cs[i].RestartPolicy != v1.ContainerRestartPolicyAlways) {
				continue
			}
			for _, p := range cs[i].Ports {
				if p.HostPort > 0 {
					out = append(out, p)
				}
			}
		}
	}
	add(pod.Spec.InitContainers, true)
	add(pod.Spec.Containers, false)
	return out
}

var generation atomic.Int64

// NextGeneration returns a process-wide increasing number; NodeInfo
// changes are stamped with it so that snapshots copy only what changed.
func NextGeneration() int64 { return generation.Add(1) }

// NodeInfo is a node with the pods on it (bound, or assumed bound) and
// their aggregates: requested resources, used host ports, PVCs in use.
type NodeInfo struct {
	node *v1.Node

	Pods                         []*PodInfo
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo

	UsedPorts HostPortInfo
	// Requested is the sum of the pods' requests; NonZeroRequested the
	// same with defaults for pods that request no CPU or memory.
	Requested        *Resource
	NonZeroRequested *Resource
	Allocatable      *Resource
	// ImageSizes maps each normalized image name the node reports (see
	// NormalizedImageName) to its size in bytes.
	ImageSizes map[string]int64
	// PVCRefCounts counts, per namespace/claim name, the pods here using it.
	PVCRefCounts map[string]int

	// Generation changes whenever the NodeInfo does.
	Generation int64
}

// NewNodeInfo returns a NodeInfo holding pods (and no node yet).
func NewNodeInfo(pods ...*v1.Pod) *NodeInfo {
	n := &NodeInfo{
		UsedPorts:        HostPortInfo{},
		Requested:        &Resource{},
		NonZeroRequested: &Resource{},
		Allocatable:      &Resource{},
		PVCRefCounts:     map[string]int{},
		Generation:       NextGeneration(),
	}
	for _, p := range pods {
		n.AddPod(p)
	}
	return n
}

// Node returns the node, nil if only its pods are known so far.
func (n *NodeInfo) Node() *v1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// SetNode sets the node object (allocatable and images are taken from it).
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.Allocatable = NewResource(node.Status.Allocatable)
	n.ImageSizes = map[string]int64{}
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			n.ImageSizes[NormalizedImageName(name)] = img.SizeBytes
		}
	}
	n.Generation = NextGeneration()
}

// RemoveNode forgets the node object, keeping its pods.
func (n *NodeInfo) RemoveNode() {
	n.node = nil
	n.Generation = NextGeneration()
}

// NormalizedImageName appends ":latest" to an image name without a tag or
// digest.
func NormalizedImageName(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
		name += ":latest"
	}
	return name
}

// AddPod adds a pod to the node.
func (n *NodeInfo) AddPod(pod *v1.Pod) { n.AddPodInfo(NewPodInfo(pod)) }

// AddPodInfo adds a parsed pod to the node.
func (n *NodeInfo) AddPodInfo(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if pi.HasAffinity() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.update(pi, 1)
}

// RemovePod removes the pod with pod's UID.
func (n *NodeInfo) RemovePod(pod *v1.Pod) error {
	for i, pi := range n.Pods {
		if pi.Pod.UID != pod.UID {
			continue
		}
		n.PodsWithAffinity = removeFrom(n.PodsWithAffinity, pod)
		n.PodsWithRequiredAntiAffinity = removeFrom(n.PodsWithRequiredAntiAffinity, pod)
		last := len(n.Pods) - 1
		n.Pods[i] = n.Pods[last]
		n.Pods[last] = nil
		n.Pods = n.Pods[:last]
		n.update(pi, -1)
		return nil
	}
	return fmt.Errorf("no pod %s/%s (uid %s) on node %s: %w", pod.Namespace, pod.Name, pod.UID, n.name(), ErrNotFound)
}

// ErrNotFound is returned for a pod or node that is not there.
var ErrNotFound = errors.New("not found")

func (n *NodeInfo) name() string {
	if n.node == nil {
		return "<unknown>"
	}
	return n.node.Name
}

func removeFrom(s []*PodInfo, pod *v1.Pod) []*PodInfo {
	for i, pi := range s {
		if pi.Pod.UID == pod.UID {
			last := len(s) - 1
			s[i] = s[last]
			s[last] = nil
			return s[:last]
		}
	}
	return s
}

func (n *NodeInfo) update(pi *PodInfo, sign int64) {
	n.Requested.AddResource(pi.Requests, sign)
	n.NonZeroRequested.MilliCPU += sign * pi.NonZeroRequests.MilliCPU
	n.NonZeroRequested.Memory += sign * pi.NonZeroRequests.Memory
	for _, p := range HostPorts(pi.Pod) {
		if sign > 0 {
			n.UsedPorts.Add(p.HostIP, string(p.Protocol), p.HostPort)
		} else {
			n.UsedPorts.Remove(p.HostIP, string(p.Protocol), p.HostPort)
		}
	}
	for _, v := range pi.Pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		key := pi.Pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
		n.PVCRefCounts[key] += int(sign)
		if n.PVCRefCounts[key] <= 0 {
			delete(n.PVCRefCounts, key)
		}
	}
	n.Generation = NextGeneration()
}

// Clone returns a copy that can be changed (pods added and removed)
// without touching n. Pods themselves are shared.
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{
		node:             n.node,
		Pods:             append([]*PodInfo(nil), n.Pods...),
		UsedPorts:        n.UsedPorts.Clone(),
		Requested:        n.Requested.Clone(),
		NonZeroRequested: n.NonZeroRequested.Clone(),
		Allocatable:      n.Allocatable.Clone(),
		ImageSizes:       n.ImageSizes,
		PVCRefCounts:     make(map[string]int, len(n.PVCRefCounts)),
		Generation:       n.Generation,
	}
	if len(n.PodsWithAffinity) > 0 {
		c.PodsWithAffinity = append([]*PodInfo(nil), n.PodsWithAffinity...)
	}
	if len(n.PodsWithRequiredAntiAffinity) > 0 {
		c.PodsWithRequiredAntiAffinity = append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...)
	}
	for k, v := range n.PVCRefCounts {
		c.PVCRefCounts[k] = v
	}
	return c
}
