package cache

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

type podState struct {
	pod     *v1.Pod
	assumed bool
	// bindingFinished is set once the binding call returned success.
	bindingFinished bool
}

// Cache is the scheduler cache. See the package documentation.
type Cache struct {
	mu    sync.Mutex
	nodes map[string]*framework.NodeInfo
	tree  *nodeTree
	pods  map[string]*podState // by UID

	images           map[string]sets.Set[string] // normalized image -> nodes
	imagesGeneration int64

	// Reused between snapshots.
	snapInfos        map[string]*framework.NodeInfo
	snapImages       map[string]int
	snapImagesGen    int64
	snapOrder        []string
	snapOrderTreeGen int64
	treeGeneration   int64
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{
		nodes:     map[string]*framework.NodeInfo{},
		tree:      newNodeTree(),
		pods:      map[string]*podState{},
		images:    map[string]sets.Set[string]{},
		snapInfos: map[string]*framework.NodeInfo{},
	}
}

func podKey(p *v1.Pod) string { return string(p.UID) }

func (c *Cache) nodeInfo(name string) *framework.NodeInfo {
	ni := c.nodes[name]
	if ni == nil {
		ni = framework.NewNodeInfo()
		c.nodes[name] = ni
	}
	return ni
}

// AddNode adds or updates a node.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni := c.nodeInfo(node.Name)
	if old := ni.Node(); old != nil {
		c.removeImages(old)
		if c.tree.updateNode(old, node) {
			c.treeGeneration++
		}
	} else {
		c.tree.addNode(node)
		c.treeGeneration++
	}
	c.addImages(node)
	ni.SetNode(node)
}

// UpdateNode is AddNode.
func (c *Cache) UpdateNode(node *v1.Node) { c.AddNode(node) }

// RemoveNode removes a node. Pods still bound to it stay counted until
// they are deleted, but the node is no longer offered.
func (c *Cache) RemoveNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni := c.nodes[node.Name]
	if ni == nil {
		return
	}
	if old := ni.Node(); old != nil {
		c.removeImages(old)
		c.tree.removeNode(old)
		c.treeGeneration++
	}
	if len(ni.Pods) == 0 {
		delete(c.nodes, node.Name)
	} else {
		ni.RemoveNode()
	}
}

func (c *Cache) addImages(node *v1.Node) {
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			n := framework.NormalizedImageName(name)
			if c.images[n] == nil {
				c.images[n] = sets.New[string]()
			}
			c.images[n].Insert(node.Name)
		}
	}
	if len(node.Status.Images) > 0 {
		c.imagesGeneration++
	}
}

func (c *Cache) removeImages(node *v1.Node) {
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			n := framework.NormalizedImageName(name)
			if s := c.images[n]; s != nil {
				s.Delete(node.Name)
				if s.Len() == 0 {
					delete(c.images, n)
				}
			}
		}
	}
	if len(node.Status.Images) > 0 {
		c.imagesGeneration++
	}
}

// AssumePod counts a pod (with spec.nodeName set to the chosen node) on
// its node before the API confirms the binding.
func (c *Cache) AssumePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := podKey(pod)
	if _, ok := c.pods[k]; ok {
		return fmt.Errorf("pod %s/%s is already in the cache", pod.Namespace, pod.Name)
	}
	c.nodeInfo(pod.Spec.NodeName).AddPod(pod)
	c.pods[k] = &podState{pod: pod, assumed: true}
	return nil
}

// FinishBinding records that the binding call for an assumed pod
// succeeded.
func (c *Cache) FinishBinding(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps := c.pods[podKey(pod)]; ps != nil && ps.assumed {
		ps.bindingFinished = true
	}
}

// ForgetPod drops an assumed pod whose binding failed.
func (c *Cache) ForgetPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := podKey(pod)
	ps := c.pods[k]
	if ps == nil || !ps.assumed {
		return
	}
	c.removePodLocked(ps.pod)
	delete(c.pods, k)
}

// IsAssumedPod reports whether pod is assumed and not yet confirmed.
func (c *Cache) IsAssumedPod(pod *v1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.pods[podKey(pod)]
	return ps != nil && ps.assumed
}

// AddPod adds a bound pod, confirming it if it was assumed.
func (c *Cache) AddPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := podKey(pod)
	if ps := c.pods[k]; ps != nil {
		// Assumed (or seen before): replace with the API's version, on
		// whatever node the API says.
		c.removePodLocked(ps.pod)
	}
	c.nodeInfo(pod.Spec.NodeName).AddPod(pod)
	c.pods[k] = &podState{pod: pod}
}

// UpdatePod replaces a bound pod.
func (c *Cache) UpdatePod(pod *v1.Pod) { c.AddPod(pod) }

// RemovePod removes a pod (deleted, or finished).
func (c *Cache) RemovePod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := podKey(pod)
	ps := c.pods[k]
	if ps == nil {
		return
	}
	c.removePodLocked(ps.pod)
	delete(c.pods, k)
}

func (c *Cache) removePodLocked(pod *v1.Pod) {
	ni := c.nodes[pod.Spec.NodeName]
	if ni == nil {
		return
	}
	_ = ni.RemovePod(pod)
	if ni.Node() == nil && len(ni.Pods) == 0 {
		delete(c.nodes, pod.Spec.NodeName)
	}
}

// Counts returns the number of nodes (known objects) and pods, and how
// many of the pods are assumed.
func (c *Cache) Counts() (nodes, pods, assumed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ni := range c.nodes {
		if ni.Node() != nil {
			nodes++
		}
	}
	for _, ps := range c.pods {
		if ps.assumed {
			assumed++
		}
	}
	return nodes, len(c.pods), assumed
}

// UpdateSnapshot makes snap the current state of the cache, reusing the
// node clones that did not change since the previous call. Snapshots
// handed out are never modified afterwards, so the previous one stays
// valid for whoever still holds it; but the same *Snapshot must not be
// read while it is being updated.
func (c *Cache) UpdateSnapshot(snap *framework.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snapOrder == nil || c.snapOrderTreeGen != c.treeGeneration {
		c.snapOrder = c.tree.list()
		c.snapOrderTreeGen = c.treeGeneration
	}
	for name := range c.snapInfos {
		if ni := c.nodes[name]; ni == nil || ni.Node() == nil {
			delete(c.snapInfos, name)
		}
	}
	list := make([]*framework.NodeInfo, 0, len(c.snapOrder))
	for _, name := range c.snapOrder {
		ni := c.nodes[name]
		if ni == nil || ni.Node() == nil {
			continue
		}
		si := c.snapInfos[name]
		if si == nil || si.Generation != ni.Generation {
			si = ni.Clone()
			c.snapInfos[name] = si
		}
		list = append(list, si)
	}
	if c.snapImages == nil || c.snapImagesGen != c.imagesGeneration {
		c.snapImages = make(map[string]int, len(c.images))
		for name, nodes := range c.images {
			c.snapImages[name] = nodes.Len()
		}
		c.snapImagesGen = c.imagesGeneration
	}
	snap.SetNodes(list, c.snapImages)
}
