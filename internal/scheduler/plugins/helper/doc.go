// Package helper holds what several plugins share: resource-allocation
// scoring (NodeResourcesFit's strategies and
// NodeResourcesBalancedAllocation) and counting pods that match a selector.
// It is not a plugin.
package helper
