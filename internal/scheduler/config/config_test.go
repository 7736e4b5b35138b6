package config

import (
	"reflect"
	"testing"
)

func enabledNames(s PluginSet) []string {
	var out []string
	for _, p := range s.Enabled {
		out = append(out, p.Name)
	}
	return out
}

func TestDefault(t *testing.T) {
	c := Default()
	if len(c.Profiles) != 1 || c.Profiles[0].SchedulerName != DefaultSchedulerName {
		t.Fatalf("profiles %+v", c.Profiles)
	}
	if c.PodInitialBackoffSeconds != 1 || c.PodMaxBackoffSeconds != 10 {
		t.Errorf("backoff %d..%d", c.PodInitialBackoffSeconds, c.PodMaxBackoffSeconds)
	}
	if got := c.Profiles[0].Plugins.MultiPoint.Enabled; !reflect.DeepEqual(got, DefaultPlugins()) {
		t.Errorf("plugins %v", got)
	}
}

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podMaxBackoffSeconds: 20
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled:
      - name: ImageLocality
      enabled:
      - name: NodeAffinity
        weight: 7
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
- schedulerName: bin-packer
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.PodMaxBackoffSeconds != 20 || c.PodInitialBackoffSeconds != 1 {
		t.Errorf("backoff %d..%d", c.PodInitialBackoffSeconds, c.PodMaxBackoffSeconds)
	}
	p := c.Profiles[0]
	got := enabledNames(p.Plugins.MultiPoint)
	for _, n := range got {
		if n == "ImageLocality" {
			t.Error("ImageLocality still enabled")
		}
	}
	for _, pl := range p.Plugins.MultiPoint.Enabled {
		if pl.Name == "NodeAffinity" && pl.Weight != 7 {
			t.Errorf("NodeAffinity weight %d", pl.Weight)
		}
	}
	if string(p.Args("NodeResourcesFit")) != `{"scoringStrategy":{"type":"MostAllocated"}}` {
		t.Errorf("args %s", p.Args("NodeResourcesFit"))
	}
	if c.Profiles[1].SchedulerName != "bin-packer" || len(c.Profiles[1].Plugins.MultiPoint.Enabled) != len(DefaultPlugins()) {
		t.Errorf("second profile %+v", c.Profiles[1])
	}
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"unknown field":     "bogus: 1",
		"duplicate profile": "profiles: [{schedulerName: a}, {schedulerName: a}]",
		"bad weight":        "profiles: [{plugins: {score: {enabled: [{name: NodeAffinity, weight: 200}]}}}]",
		"backoff order":     "podInitialBackoffSeconds: 20\npodMaxBackoffSeconds: 10",
		"percentage":        "percentageOfNodesToScore: 101",
	} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestMergePluginSet(t *testing.T) {
	base := PluginSet{Enabled: []Plugin{{Name: "A", Weight: 1}, {Name: "B"}, {Name: "C", Weight: 2}}}
	tests := []struct {
		name   string
		custom PluginSet
		want   []Plugin
	}{
		{"nothing", PluginSet{}, base.Enabled},
		{"disable one", PluginSet{Disabled: []Plugin{{Name: "B"}}}, []Plugin{{Name: "A", Weight: 1}, {Name: "C", Weight: 2}}},
		{"reweigh in place", PluginSet{Enabled: []Plugin{{Name: "C", Weight: 9}}}, []Plugin{{Name: "A", Weight: 1}, {Name: "B"}, {Name: "C", Weight: 9}}},
		{"append new", PluginSet{Enabled: []Plugin{{Name: "D"}}}, []Plugin{{Name: "A", Weight: 1}, {Name: "B"}, {Name: "C", Weight: 2}, {Name: "D"}}},
		{"disable all", PluginSet{Disabled: []Plugin{{Name: "*"}}, Enabled: []Plugin{{Name: "C"}}}, []Plugin{{Name: "C"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MergePluginSet(base, tt.custom)
			if !reflect.DeepEqual(got.Enabled, tt.want) {
				t.Errorf("got %v, want %v", got.Enabled, tt.want)
			}
			// Merging the defaults again changes nothing.
			if again := MergePluginSet(base, got); !reflect.DeepEqual(again.Enabled, got.Enabled) {
				t.Errorf("not idempotent: %v then %v", got.Enabled, again.Enabled)
			}
		})
	}
}
