// Package plugins is the registry of the scheduler's in-tree plugins: one
// package per plugin below this folder, each with a Name, a New factory
// and compile-time assertions of the extension points it implements.
// NewRegistry lists them all; config.DefaultPlugins says which are enabled
// by default, in which order and with which score weights.
//
//	plugin                           extension points            default weight
//	NodeUnschedulable                Filter
//	NodeName                         Filter
//	TaintToleration                  Filter, Score               3
//	NodeAffinity                     PreFilter, Filter, Score    2
//	NodePorts                        PreFilter, Filter
//	NodeResourcesFit                 PreFilter, Filter, Score    1 (LeastAllocated)
//	VolumeRestrictions               PreFilter, Filter
//	PodTopologySpread                PreFilter, Filter, Score    2
//	InterPodAffinity                 PreFilter, Filter, Score    2
//	DefaultPreemption                PostFilter
//	NodeResourcesBalancedAllocation  Score                       1
//	ImageLocality                    Score                       1
package plugins
