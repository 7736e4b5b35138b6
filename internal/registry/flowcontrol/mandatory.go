package flowcontrol

import (
	"sync"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

// The mandatory objects (exempt and catch-all) of upstream's bootstrap
// configuration, defaulted, by name: their specs are fixed.
var (
	mandatoryFlowSchemas = sync.OnceValue(func() map[string]*flowcontrolv1.FlowSchema {
		out := map[string]*flowcontrolv1.FlowSchema{}
		for _, fs := range bootstrap.MandatoryFlowSchemas {
			fs = fs.DeepCopy()
			DefaultFlowSchema(fs)
			out[fs.Name] = fs
		}
		return out
	})
	mandatoryPriorityLevels = sync.OnceValue(func() map[string]*flowcontrolv1.PriorityLevelConfiguration {
		out := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
		for _, pl := range bootstrap.MandatoryPriorityLevelConfigurations {
			pl = pl.DeepCopy()
			DefaultPriorityLevel(pl)
			out[pl.Name] = pl
		}
		return out
	})
)
