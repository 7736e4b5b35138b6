package helper

import (
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// MatchCounter memoizes CountPodsMatchSelector per node. A NodeInfo's
// Generation changes with every change to it (and is process-wide
// unique), so a count is reused only for the same node at the same
// generation. Spreading a workload's pods asks the same question of every
// node for each of its pods, while one bind changes one node: this makes
// that question O(nodes) instead of O(pods) per pod. Safe for concurrent
// use.
type MatchCounter struct {
	mu sync.Mutex
	// bySelector maps a namespace and selector key to each node's count.
	bySelector map[string]map[string]generationCount
}

type generationCount struct {
	generation int64
	count      int
}

// maxSelectors bounds the memo: past it, it starts afresh.
const maxSelectors = 256

// SelectorKey names a (namespace, selector) pair for Count; compute it
// once per scheduling cycle.
func SelectorKey(ns string, selector labels.Selector) string {
	return ns + "\x00" + selector.String()
}

// Count is CountPodsMatchSelector(ni.Pods, selector, ns), with key from
// SelectorKey(ns, selector).
func (m *MatchCounter) Count(ni *framework.NodeInfo, selector labels.Selector, ns, key string) int {
	node := ni.Node()
	if node == nil {
		return CountPodsMatchSelector(ni.Pods, selector, ns)
	}
	m.mu.Lock()
	if c, ok := m.bySelector[key][node.Name]; ok && c.generation == ni.Generation {
		m.mu.Unlock()
		return c.count
	}
	m.mu.Unlock()
	n := CountPodsMatchSelector(ni.Pods, selector, ns)
	m.mu.Lock()
	defer m.mu.Unlock()
	counts := m.bySelector[key]
	if counts == nil {
		if m.bySelector == nil || len(m.bySelector) >= maxSelectors {
			m.bySelector = map[string]map[string]generationCount{}
		}
		counts = map[string]generationCount{}
		m.bySelector[key] = counts
	}
	counts[node.Name] = generationCount{generation: ni.Generation, count: n}
	return n
}
