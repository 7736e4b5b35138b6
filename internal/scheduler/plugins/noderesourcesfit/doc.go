// Package noderesourcesfit is the NodeResourcesFit plugin. As a filter it
// checks that a node's allocatable CPU, memory, ephemeral storage, pod
// count and scalar (extended, hugepages) resources cover what its pods
// request plus the new pod's request ("Insufficient cpu", "Too many
// pods"). Requests count init containers, sidecars and pod overhead as
// upstream does (k8s.io/component-helpers/resource). As a score it ranks
// nodes by a strategy: LeastAllocated (the default, spreading) or
// MostAllocated (packing).
package noderesourcesfit
