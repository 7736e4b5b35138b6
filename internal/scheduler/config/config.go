package config

import (
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// DefaultSchedulerName is the profile used for pods that do not name one.
const DefaultSchedulerName = "default-scheduler"

// Queue backoff defaults, in seconds (upstream's podInitialBackoffSeconds
// and podMaxBackoffSeconds).
const (
	DefaultPodInitialBackoffSeconds = 1
	DefaultPodMaxBackoffSeconds     = 10
)

// Config is the whole scheduler configuration.
type Config struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`

	// PercentageOfNodesToScore bounds how many feasible nodes the scheduler
	// looks for before it stops filtering and scores them. 0 (the default)
	// means adaptive: 50% less 1% per 125 nodes, at least 5%, and never
	// fewer than 100 nodes.
	PercentageOfNodesToScore *int32 `json:"percentageOfNodesToScore,omitempty"`
	// PodInitialBackoffSeconds is the backoff after a pod's first failed
	// attempt; it doubles on every further failure up to
	// PodMaxBackoffSeconds.
	PodInitialBackoffSeconds int64 `json:"podInitialBackoffSeconds,omitempty"`
	PodMaxBackoffSeconds     int64 `json:"podMaxBackoffSeconds,omitempty"`

	// Profiles are the schedulers this process runs, by schedulerName.
	Profiles []Profile `json:"profiles,omitempty"`
}

// Profile is one scheduler: the pods whose spec.schedulerName equals
// SchedulerName are scheduled with its plugins.
type Profile struct {
	SchedulerName string `json:"schedulerName,omitempty"`
	// PercentageOfNodesToScore overrides the global setting for this
	// profile.
	PercentageOfNodesToScore *int32 `json:"percentageOfNodesToScore,omitempty"`
	// Plugins enables and disables plugins. After SetDefaults, MultiPoint
	// holds the defaults merged with what the file said.
	Plugins *Plugins `json:"plugins,omitempty"`
	// PluginConfig holds per-plugin arguments.
	PluginConfig []PluginConfig `json:"pluginConfig,omitempty"`
}

// Plugins lists, per extension point, what is enabled and disabled.
// MultiPoint enables a plugin at every point it implements; a specific
// point's set then overrides it there (disable it, change its weight).
type Plugins struct {
	MultiPoint PluginSet `json:"multiPoint,omitempty"`
	PreFilter  PluginSet `json:"preFilter,omitempty"`
	Filter     PluginSet `json:"filter,omitempty"`
	PostFilter PluginSet `json:"postFilter,omitempty"`
	PreScore   PluginSet `json:"preScore,omitempty"`
	Score      PluginSet `json:"score,omitempty"`
	Reserve    PluginSet `json:"reserve,omitempty"`
	PreBind    PluginSet `json:"preBind,omitempty"`
}

// PluginSet is what to enable and disable at one extension point. A
// disabled name "*" disables every default plugin there.
type PluginSet struct {
	Enabled  []Plugin `json:"enabled,omitempty"`
	Disabled []Plugin `json:"disabled,omitempty"`
}

// Plugin names a plugin and, for score plugins, its weight (0 means the
// default weight: the multiPoint weight, else 1).
type Plugin struct {
	Name   string `json:"name"`
	Weight int32  `json:"weight,omitempty"`
}

// PluginConfig is the arguments of one plugin, as JSON.
type PluginConfig struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// DefaultPlugins is upstream's default multiPoint set, in upstream's order
// (which is the order filters run in), less the plugins plainkube does not
// have (volume limits and zones, DRA). Weights are upstream's defaults.
func DefaultPlugins() []Plugin {
	return []Plugin{
		{Name: "NodeUnschedulable"},
		{Name: "NodeName"},
		{Name: "TaintToleration", Weight: 3},
		{Name: "NodeAffinity", Weight: 2},
		{Name: "NodePorts"},
		{Name: "NodeResourcesFit", Weight: 1},
		{Name: "VolumeRestrictions"},
		{Name: "VolumeBinding"},
		{Name: "PodTopologySpread", Weight: 2},
		{Name: "InterPodAffinity", Weight: 2},
		{Name: "DefaultPreemption"},
		{Name: "NodeResourcesBalancedAllocation", Weight: 1},
		{Name: "ImageLocality", Weight: 1},
	}
}

// Default returns the configuration used when none is given: one profile,
// default-scheduler, with the default plugins.
func Default() *Config {
	c := &Config{}
	c.SetDefaults()
	return c
}

// SetDefaults fills in what c leaves out: the backoff settings, a
// default-scheduler profile when there is none, and in each profile the
// default plugins merged with the profile's own multiPoint set.
func (c *Config) SetDefaults() {
	if c.PodInitialBackoffSeconds == 0 {
		c.PodInitialBackoffSeconds = DefaultPodInitialBackoffSeconds
	}
	if c.PodMaxBackoffSeconds == 0 {
		c.PodMaxBackoffSeconds = DefaultPodMaxBackoffSeconds
	}
	if len(c.Profiles) == 0 {
		c.Profiles = []Profile{{}}
	}
	for i := range c.Profiles {
		p := &c.Profiles[i]
		if p.SchedulerName == "" {
			p.SchedulerName = DefaultSchedulerName
		}
		if p.PercentageOfNodesToScore == nil {
			p.PercentageOfNodesToScore = c.PercentageOfNodesToScore
		}
		if p.Plugins == nil {
			p.Plugins = &Plugins{}
		}
		// Merging is idempotent: a second merge of the defaults changes
		// nothing.
		p.Plugins.MultiPoint = MergePluginSet(PluginSet{Enabled: DefaultPlugins()}, p.Plugins.MultiPoint)
	}
}

// MergePluginSet merges custom into base the way upstream does: base's
// enabled plugins stay in order unless custom disables them (or "*"); a
// plugin custom enables again replaces base's entry in place (so its
// weight wins); custom's other plugins are appended.
func MergePluginSet(base, custom PluginSet) PluginSet {
	disabled := map[string]bool{}
	var out PluginSet
	for _, d := range custom.Disabled {
		disabled[d.Name] = true
		out.Disabled = append(out.Disabled, d)
	}
	for _, d := range base.Disabled {
		disabled[d.Name] = true
		out.Disabled = append(out.Disabled, d)
	}
	customIdx := map[string]int{}
	for i, p := range custom.Enabled {
		customIdx[p.Name] = i
	}
	replaced := map[int]bool{}
	if !disabled["*"] {
		for _, p := range base.Enabled {
			if disabled[p.Name] {
				continue
			}
			if i, ok := customIdx[p.Name]; ok {
				p = custom.Enabled[i]
				replaced[i] = true
			}
			out.Enabled = append(out.Enabled, p)
		}
	}
	for i, p := range custom.Enabled {
		if !replaced[i] {
			out.Enabled = append(out.Enabled, p)
		}
	}
	return out
}

// Args returns the raw arguments for the named plugin, or nil.
func (p *Profile) Args(name string) json.RawMessage {
	for _, pc := range p.PluginConfig {
		if pc.Name == name {
			return pc.Args
		}
	}
	return nil
}

// Validate reports configuration errors that do not depend on which
// plugins exist: duplicate or empty scheduler names, negative weights and
// percentages, inverted backoffs.
func (c *Config) Validate() error {
	if c.PodInitialBackoffSeconds <= 0 || c.PodMaxBackoffSeconds < c.PodInitialBackoffSeconds {
		return fmt.Errorf("podInitialBackoffSeconds (%d) must be positive and not above podMaxBackoffSeconds (%d)", c.PodInitialBackoffSeconds, c.PodMaxBackoffSeconds)
	}
	if err := validPercentage(c.PercentageOfNodesToScore); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, p := range c.Profiles {
		if p.SchedulerName == "" {
			return fmt.Errorf("profile without schedulerName")
		}
		if seen[p.SchedulerName] {
			return fmt.Errorf("duplicate profile %q", p.SchedulerName)
		}
		seen[p.SchedulerName] = true
		if err := validPercentage(p.PercentageOfNodesToScore); err != nil {
			return fmt.Errorf("profile %q: %w", p.SchedulerName, err)
		}
		if p.Plugins != nil {
			for _, set := range []PluginSet{p.Plugins.MultiPoint, p.Plugins.Score} {
				for _, pl := range set.Enabled {
					if pl.Weight < 0 || pl.Weight > 100 {
						return fmt.Errorf("profile %q: plugin %q: weight %d not in [0, 100]", p.SchedulerName, pl.Name, pl.Weight)
					}
				}
			}
		}
	}
	return nil
}

func validPercentage(p *int32) error {
	if p != nil && (*p < 0 || *p > 100) {
		return fmt.Errorf("percentageOfNodesToScore %d not in [0, 100]", *p)
	}
	return nil
}

// Parse reads a configuration from YAML or JSON, applies the defaults and
// validates it. Unknown fields are errors.
func Parse(data []byte) (*Config, error) {
	c := &Config{}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, fmt.Errorf("scheduler config: %w", err)
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler config: %w", err)
	}
	return c, nil
}

// Load reads the configuration file at path (see Parse).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}
