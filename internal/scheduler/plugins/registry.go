package plugins

import (
	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/plugins/balancedallocation"
	"plainkube.dev/plainkube/internal/scheduler/plugins/defaultpreemption"
	"plainkube.dev/plainkube/internal/scheduler/plugins/imagelocality"
	"plainkube.dev/plainkube/internal/scheduler/plugins/interpodaffinity"
	"plainkube.dev/plainkube/internal/scheduler/plugins/nodeaffinity"
	"plainkube.dev/plainkube/internal/scheduler/plugins/nodename"
	"plainkube.dev/plainkube/internal/scheduler/plugins/nodeports"
	"plainkube.dev/plainkube/internal/scheduler/plugins/noderesourcesfit"
	"plainkube.dev/plainkube/internal/scheduler/plugins/nodeunschedulable"
	"plainkube.dev/plainkube/internal/scheduler/plugins/podtopologyspread"
	"plainkube.dev/plainkube/internal/scheduler/plugins/tainttoleration"
	"plainkube.dev/plainkube/internal/scheduler/plugins/volumebinding"
	"plainkube.dev/plainkube/internal/scheduler/plugins/volumerestrictions"
)

// NewRegistry returns every in-tree plugin by name.
func NewRegistry() framework.Registry {
	return framework.Registry{
		nodeunschedulable.Name:  nodeunschedulable.New,
		nodename.Name:           nodename.New,
		tainttoleration.Name:    tainttoleration.New,
		nodeaffinity.Name:       nodeaffinity.New,
		nodeports.Name:          nodeports.New,
		noderesourcesfit.Name:   noderesourcesfit.New,
		volumerestrictions.Name: volumerestrictions.New,
		volumebinding.Name:      volumebinding.New,
		podtopologyspread.Name:  podtopologyspread.New,
		interpodaffinity.Name:   interpodaffinity.New,
		defaultpreemption.Name:  defaultpreemption.New,
		balancedallocation.Name: balancedallocation.New,
		imagelocality.Name:      imagelocality.New,
	}
}
