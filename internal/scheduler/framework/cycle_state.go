package framework

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
)

// StateData is what a plugin stores in the CycleState between its
// extension points (PreFilter to Filter, PreScore to Score).
type StateData interface {
	// Clone returns a copy that can be changed independently (by
	// PreFilterExtensions during preemption); immutable data may return
	// itself.
	Clone() StateData
}

// CycleState holds plugin state for one pod's scheduling cycle. It is not
// safe for concurrent use; a cycle runs on one goroutine.
type CycleState struct {
	storage map[string]StateData
	// SkipFilterPlugins are plugins whose PreFilter returned Skip.
	SkipFilterPlugins sets.Set[string]
	// SkipScorePlugins are plugins whose PreScore returned Skip.
	SkipScorePlugins sets.Set[string]
	// RecordPluginMetrics: this cycle's plugins are timed
	// (Framework.SampleCycle).
	RecordPluginMetrics bool
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{storage: map[string]StateData{}}
}

// Read returns the data stored under key.
func (c *CycleState) Read(key string) (StateData, error) {
	if v, ok := c.storage[key]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("reading %q from cycle state: %w", key, ErrNotFound)
}

// Write stores data under key.
func (c *CycleState) Write(key string, v StateData) { c.storage[key] = v }

// Delete removes key.
func (c *CycleState) Delete(key string) { delete(c.storage, key) }

// Clone copies the state, cloning each value.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	out := &CycleState{storage: make(map[string]StateData, len(c.storage)), RecordPluginMetrics: c.RecordPluginMetrics}
	for k, v := range c.storage {
		out.storage[k] = v.Clone()
	}
	if c.SkipFilterPlugins != nil {
		out.SkipFilterPlugins = c.SkipFilterPlugins.Clone()
	}
	if c.SkipScorePlugins != nil {
		out.SkipScorePlugins = c.SkipScorePlugins.Clone()
	}
	return out
}

// ReadAs reads key and asserts its type.
func ReadAs[T StateData](c *CycleState, key string) (T, error) {
	var zero T
	v, err := c.Read(key)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("cycle state %q holds %T, not %T", key, v, zero)
	}
	return t, nil
}
