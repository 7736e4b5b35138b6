package cache

import v1 "k8s.io/api/core/v1"

// nodeTree groups node names by zone (region and zone labels) so that
// list can interleave zones: one node of each zone in turn.
type nodeTree struct {
	tree     map[string][]string
	zones    []string
	numNodes int
}

func newNodeTree() *nodeTree { return &nodeTree{tree: map[string][]string{}} }

// zoneKey is region and zone, from the topology labels or their
// deprecated failure-domain forms.
func zoneKey(n *v1.Node) string {
	l := n.Labels
	region, zone := l[v1.LabelTopologyRegion], l[v1.LabelTopologyZone]
	if region == "" {
		region = l[v1.LabelFailureDomainBetaRegion]
	}
	if zone == "" {
		zone = l[v1.LabelFailureDomainBetaZone]
	}
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}

func (t *nodeTree) addNode(n *v1.Node) {
	z := zoneKey(n)
	names, ok := t.tree[z]
	for _, name := range names {
		if name == n.Name {
			return
		}
	}
	if !ok {
		t.zones = append(t.zones, z)
	}
	t.tree[z] = append(names, n.Name)
	t.numNodes++
}

func (t *nodeTree) removeNode(n *v1.Node) {
	z := zoneKey(n)
	names := t.tree[z]
	for i, name := range names {
		if name != n.Name {
			continue
		}
		names = append(names[:i:i], names[i+1:]...)
		t.numNodes--
		if len(names) == 0 {
			delete(t.tree, z)
			for j, zz := range t.zones {
				if zz == z {
					t.zones = append(t.zones[:j:j], t.zones[j+1:]...)
					break
				}
			}
		} else {
			t.tree[z] = names
		}
		return
	}
}

// updateNode moves a node whose zone changed; it reports a change.
func (t *nodeTree) updateNode(old, cur *v1.Node) bool {
	if zoneKey(old) == zoneKey(cur) {
		return false
	}
	t.removeNode(old)
	t.addNode(cur)
	return true
}

// list returns node names zone by zone in turn.
func (t *nodeTree) list() []string {
	out := make([]string, 0, t.numNodes)
	for i := 0; len(out) < t.numNodes; i++ {
		added := false
		for _, z := range t.zones {
			if names := t.tree[z]; i < len(names) {
				out = append(out, names[i])
				added = true
			}
		}
		if !added {
			break
		}
	}
	return out
}
