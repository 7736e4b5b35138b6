package node

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/api/localpath"

	"plainkube.dev/plainkube/internal/api/podutil"
)

// kind is the type of object a node may be related to.
type kind uint8

const (
	secretKind kind = iota
	configMapKind
	claimKind
	serviceAccountKind
	resourceClaimKind
)

// object names one namespaced object of a kind.
type object struct {
	kind      kind
	namespace string
	name      string
}

// podKey names a pod.
type podKey struct{ namespace, name string }

// podEntry is what the graph keeps of a pod bound to a node.
type podEntry struct {
	node string
	refs []object
}

// volumeEntry is what the graph keeps of a PersistentVolume: the claim
// it is bound to, the Secrets it names, and the node whose local-path
// folder it is (package localpath).
type volumeEntry struct {
	claim     object // zero if unbound
	secrets   []object
	localPath string // "" if none
}

// Graph is the relation between nodes and the objects their pods use, as
// upstream's node authorizer graph holds it: a pod bound to a node relates
// the node to the pod's Secrets, ConfigMaps, PersistentVolumeClaims,
// ServiceAccount and ResourceClaims; a PersistentVolume bound to one of
// those claims, and the Secrets that volume names, are related to the
// node too; so is a PodCertificateRequest naming the node. Every question is a few map lookups under a read lock.
//
// The graph is fed by the informers of the API server (Populate); its
// methods are also its test surface.
type Graph struct {
	mu   sync.RWMutex
	pods map[podKey]podEntry
	// uses counts, per object, the pods of each node that reference it.
	uses map[object]map[string]int
	// volumes are the PersistentVolumes by name; volumesOf the volumes
	// naming a Secret.
	volumes   map[string]volumeEntry
	volumesOf map[object]map[string]bool
	// podCertificateRequests holds the node each request names.
	podCertificateRequests map[podKey]string
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{pods: map[podKey]podEntry{}, uses: map[object]map[string]int{},
		volumes: map[string]volumeEntry{}, volumesOf: map[object]map[string]bool{}, podCertificateRequests: map[podKey]string{}}
}

// SetPodCertificateRequest records that the request namespace/name names
// node (spec.nodeName, which never changes).
func (g *Graph) SetPodCertificateRequest(namespace, name, node string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.podCertificateRequests[podKey{namespace, name}] = node
}

// DeletePodCertificateRequest forgets the request namespace/name.
func (g *Graph) DeletePodCertificateRequest(namespace, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.podCertificateRequests, podKey{namespace, name})
}

// podCertificateRequestOf reports whether the request namespace/name
// names node.
func (g *Graph) podCertificateRequestOf(node, namespace, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.podCertificateRequests[podKey{namespace, name}]
	return ok && n == node
}

// SetPod records pod as it is now: bound to a node, it relates that node
// to what it references; not bound (or finished with its node unset), it
// relates nothing.
func (g *Graph) SetPod(pod *corev1.Pod) {
	k := podKey{pod.Namespace, pod.Name}
	var e podEntry
	if pod.Spec.NodeName != "" {
		e = podEntry{node: pod.Spec.NodeName, refs: podObjects(pod)}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removePodLocked(k)
	if e.node == "" {
		return
	}
	g.pods[k] = e
	for _, o := range e.refs {
		m := g.uses[o]
		if m == nil {
			m = map[string]int{}
			g.uses[o] = m
		}
		m[e.node]++
	}
}

// DeletePod forgets the pod namespace/name.
func (g *Graph) DeletePod(namespace, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removePodLocked(podKey{namespace, name})
}

func (g *Graph) removePodLocked(k podKey) {
	e, ok := g.pods[k]
	if !ok {
		return
	}
	delete(g.pods, k)
	for _, o := range e.refs {
		m := g.uses[o]
		if m[e.node]--; m[e.node] <= 0 {
			delete(m, e.node)
		}
		if len(m) == 0 {
			delete(g.uses, o)
		}
	}
}

// podObjects are the objects a pod references.
func podObjects(pod *corev1.Pod) []object {
	r := podutil.ReferencesOf(pod)
	ns := pod.Namespace
	out := make([]object, 0, len(r.Secrets)+len(r.ConfigMaps)+len(r.PersistentVolumeClaims)+len(r.ResourceClaims)+1)
	for _, n := range r.Secrets {
		out = append(out, object{secretKind, ns, n})
	}
	for _, n := range r.ConfigMaps {
		out = append(out, object{configMapKind, ns, n})
	}
	for _, n := range r.PersistentVolumeClaims {
		out = append(out, object{claimKind, ns, n})
	}
	for _, n := range r.ResourceClaims {
		out = append(out, object{resourceClaimKind, ns, n})
	}
	if r.ServiceAccount != "" {
		out = append(out, object{serviceAccountKind, ns, r.ServiceAccount})
	}
	return out
}

// SetVolume records a PersistentVolume: the claim it is bound to, the
// Secrets it names, and the node of its local-path folder (the
// provisioner's volumes labelled plainkube.dev/local-path-node).
func (g *Graph) SetVolume(pv *corev1.PersistentVolume) {
	var e volumeEntry
	if c := pv.Spec.ClaimRef; c != nil && c.Name != "" {
		e.claim = object{claimKind, c.Namespace, c.Name}
	}
	for _, s := range volumeSecrets(pv) {
		e.secrets = append(e.secrets, object{secretKind, s.Namespace, s.Name})
	}
	if pv.Annotations[localpath.ProvisionedByAnnotation] == localpath.Provisioner {
		e.localPath = pv.Labels[localpath.NodeLabel]
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeVolumeLocked(pv.Name)
	g.volumes[pv.Name] = e
	for _, s := range e.secrets {
		m := g.volumesOf[s]
		if m == nil {
			m = map[string]bool{}
			g.volumesOf[s] = m
		}
		m[pv.Name] = true
	}
}

// DeleteVolume forgets the PersistentVolume name.
func (g *Graph) DeleteVolume(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeVolumeLocked(name)
}

func (g *Graph) removeVolumeLocked(name string) {
	e, ok := g.volumes[name]
	if !ok {
		return
	}
	delete(g.volumes, name)
	for _, s := range e.secrets {
		m := g.volumesOf[s]
		delete(m, name)
		if len(m) == 0 {
			delete(g.volumesOf, s)
		}
	}
}

// volumeSecrets are the Secrets a PersistentVolume names (with their
// namespaces).
func volumeSecrets(pv *corev1.PersistentVolume) []corev1.SecretReference {
	var out []corev1.SecretReference
	ref := func(r *corev1.SecretReference) {
		if r != nil && r.Name != "" {
			out = append(out, *r)
		}
	}
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.CSI != nil:
		ref(s.CSI.ControllerPublishSecretRef)
		ref(s.CSI.ControllerExpandSecretRef)
		ref(s.CSI.NodePublishSecretRef)
		ref(s.CSI.NodeStageSecretRef)
		ref(s.CSI.NodeExpandSecretRef)
	case s.AzureFile != nil:
		ns := "default"
		if s.AzureFile.SecretNamespace != nil {
			ns = *s.AzureFile.SecretNamespace
		}
		ref(&corev1.SecretReference{Namespace: ns, Name: s.AzureFile.SecretName})
	case s.CephFS != nil:
		ref(s.CephFS.SecretRef)
	case s.Cinder != nil:
		ref(s.Cinder.SecretRef)
	case s.FlexVolume != nil:
		ref(s.FlexVolume.SecretRef)
	case s.RBD != nil:
		ref(s.RBD.SecretRef)
	case s.ScaleIO != nil:
		ref(s.ScaleIO.SecretRef)
	case s.ISCSI != nil:
		ref(s.ISCSI.SecretRef)
	case s.StorageOS != nil && s.StorageOS.SecretRef != nil:
		ref(&corev1.SecretReference{Namespace: s.StorageOS.SecretRef.Namespace, Name: s.StorageOS.SecretRef.Name})
	}
	return out
}

// usedBy reports whether a pod on node references o.
func (g *Graph) usedByLocked(o object, node string) bool { return g.uses[o][node] > 0 }

// related reports whether node may reach o: a pod on it references o, or
// (for a Secret) o is named by a PersistentVolume bound to a claim a pod
// on it uses.
func (g *Graph) related(node string, o object) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.usedByLocked(o, node) {
		return true
	}
	if o.kind == secretKind {
		for pv := range g.volumesOf[o] {
			if c := g.volumes[pv].claim; c.name != "" && g.usedByLocked(c, node) {
				return true
			}
		}
	}
	return false
}

// volumeRelated reports whether the PersistentVolume name is bound to a
// claim a pod on node uses.
func (g *Graph) volumeRelated(node, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	c := g.volumes[name].claim
	return c.name != "" && g.usedByLocked(c, node)
}

// localPathOn reports whether the PersistentVolume name is a local-path
// volume whose folder is on node.
func (g *Graph) localPathOn(node, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return name != "" && g.volumes[name].localPath == node
}

// podOn reports whether the pod namespace/name is bound to node.
func (g *Graph) podOn(node, namespace, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.pods[podKey{namespace, name}].node == node
}
