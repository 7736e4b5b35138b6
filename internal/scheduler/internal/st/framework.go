package st

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/config"
	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Framework returns a framework running only the named plugin (weight 1),
// with args as its JSON arguments ("" for none).
func Framework(t testing.TB, name string, factory framework.Factory, args string) *framework.Framework {
	t.Helper()
	p := &config.Profile{
		SchedulerName: "test",
		Plugins:       &config.Plugins{MultiPoint: config.PluginSet{Enabled: []config.Plugin{{Name: name, Weight: 1}}}},
	}
	if args != "" {
		p.PluginConfig = []config.PluginConfig{{Name: name, Args: json.RawMessage(args)}}
	}
	f, err := framework.NewFramework(framework.Registry{name: factory}, p)
	if err != nil {
		t.Fatalf("framework: %v", err)
	}
	return f
}

// Filter runs PreFilter and then Filter on every node of snap, returning
// each node's status (nil when it passes). A PreFilter rejection is every
// node's status.
func Filter(t testing.TB, f *framework.Framework, pod *v1.Pod, snap *framework.Snapshot) map[string]*framework.Status {
	t.Helper()
	ctx := context.Background()
	f.SetSnapshot(snap)
	state := framework.NewCycleState()
	out := map[string]*framework.Status{}
	_, s := f.RunPreFilterPlugins(ctx, state, pod)
	for _, ni := range snap.List() {
		if !s.IsSuccess() {
			out[ni.Node().Name] = s
			continue
		}
		out[ni.Node().Name] = f.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
	}
	return out
}

// Score runs PreScore, Score and NormalizeScore over all nodes of snap,
// returning each node's final score (weight 1). A PreScore Skip scores 0.
func Score(t testing.TB, f *framework.Framework, pod *v1.Pod, snap *framework.Snapshot) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	f.SetSnapshot(snap)
	state := framework.NewCycleState()
	if _, s := f.RunPreFilterPlugins(ctx, state, pod); !s.IsSuccess() {
		t.Fatalf("prefilter: %v", s)
	}
	if s := f.RunPreScorePlugins(ctx, state, pod, snap.List()); !s.IsSuccess() {
		t.Fatalf("prescore: %v", s)
	}
	scores, s := f.RunScorePlugins(ctx, state, pod, snap.List())
	if !s.IsSuccess() {
		t.Fatalf("score: %v", s)
	}
	out := map[string]int64{}
	for _, ns := range scores {
		out[ns.Name] = ns.TotalScore
	}
	return out
}

// Reasons renders statuses as node -> "Code: reasons" for comparisons,
// leaving out passing nodes.
func Reasons(m map[string]*framework.Status) map[string]string {
	out := map[string]string{}
	for n, s := range m {
		if !s.IsSuccess() {
			out[n] = s.Code().String() + ": " + s.Message()
		}
	}
	return out
}
