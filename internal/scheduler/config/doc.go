// Package config holds the scheduler's configuration: which profiles it runs
// (one per schedulerName), which plugins each profile enables, with what
// score weights and arguments, and the queue's backoff settings.
//
// The shape follows upstream's KubeSchedulerConfiguration (v1), reduced to
// what plainkube implements, so that a small upstream file loads unchanged:
//
//	apiVersion: kubescheduler.config.k8s.io/v1   # optional, ignored
//	kind: KubeSchedulerConfiguration             # optional, ignored
//	profiles:
//	- schedulerName: default-scheduler
//	  plugins:
//	    multiPoint:
//	      disabled: [{name: ImageLocality}]
//	    score:
//	      enabled: [{name: NodeAffinity, weight: 5}]
//	  pluginConfig:
//	  - name: NodeResourcesFit
//	    args: {scoringStrategy: {type: MostAllocated}}
//
// Load reads such a file; Default returns the configuration used when none
// is given; SetDefaults fills in what a loaded file leaves out. The package
// only describes: the framework turns a Profile into plugin instances.
package config
