package framework

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/scheduler/config"
)

// Framework is one profile's plugins, instantiated and ordered per
// extension point, and the runner of those points. It holds the snapshot
// of the cycle being run (SetSnapshot), so one Framework serves one
// scheduling cycle at a time.
type Framework struct {
	profileName string
	percentage  *int32

	plugins    map[string]Plugin
	preFilter  []PreFilterPlugin
	filter     []FilterPlugin
	postFilter []PostFilterPlugin
	preScore   []PreScorePlugin
	score      []ScorePlugin
	reserve    []ReservePlugin
	preBind    []PreBindPlugin
	weights    map[string]int64

	snapshot  *Snapshot
	client    kubernetes.Interface
	informers informers.SharedInformerFactory
	// observe, if set, is told how long each extension point took.
	observe ExtensionPointObserver
	// observePlugin, if set, is told how long each plugin took, in the
	// cycles SampleCycle marks; cycles counts the cycles sampled from.
	observePlugin PluginObserver
	cycles        atomic.Uint64
}

// ExtensionPointObserver is told, after each run of an extension point's
// plugins (PreFilter, PostFilter, PreScore, Score, Reserve, Unreserve,
// PreBind; not Filter, which runs per node), its status code and how long
// it took: the scheduler's scheduler_framework_extension_point_duration_seconds.
type ExtensionPointObserver func(profile, point string, code Code, took time.Duration)

// WithExtensionPointObserver times the extension points.
func WithExtensionPointObserver(o ExtensionPointObserver) Option {
	return func(f *Framework) { f.observe = o }
}

// timed reports an extension point's run to the observer; deferred with
// the run's start and its status's address.
func (f *Framework) timed(point string, start time.Time, st **Status) {
	if f.observe != nil {
		f.observe(f.profileName, point, (*st).Code(), time.Since(start))
	}
}

// PluginObserver is told, in the cycles SampleCycle marks, how long each
// plugin's run at an extension point took and its status code: the
// scheduler's scheduler_plugin_execution_duration_seconds. Filter and
// Score plugins are reported once per node.
type PluginObserver func(plugin, point string, code Code, took time.Duration)

// WithPluginObserver times each plugin in sampled cycles.
func WithPluginObserver(o PluginObserver) Option {
	return func(f *Framework) { f.observePlugin = o }
}

// pluginSampleEvery: one cycle in this many has its plugins timed, as
// upstream samples 10 % of cycles (timing every plugin on every node of
// every cycle would cost more than the plugins).
const pluginSampleEvery = 10

// SampleCycle marks one cycle in pluginSampleEvery for its plugins to be
// timed (CycleState.RecordPluginMetrics), when there is an observer.
func (f *Framework) SampleCycle(state *CycleState) {
	state.RecordPluginMetrics = f.observePlugin != nil && f.cycles.Add(1)%pluginSampleEvery == 1
}

// pluginStart is when a plugin's run starts, if the cycle is sampled; the
// zero time otherwise.
func (f *Framework) pluginStart(state *CycleState) time.Time {
	if state == nil || !state.RecordPluginMetrics {
		return time.Time{}
	}
	return time.Now()
}

// pluginDone reports a plugin's run that pluginStart timed.
func (f *Framework) pluginDone(plugin, point string, start time.Time, st *Status) {
	if !start.IsZero() {
		f.observePlugin(plugin, point, st.Code(), time.Since(start))
	}
}

// Option sets what a Framework gives its plugins through Handle.
type Option func(*Framework)

// WithClientSet gives the plugins the scheduler's API client.
func WithClientSet(c kubernetes.Interface) Option { return func(f *Framework) { f.client = c } }

// WithInformerFactory gives the plugins the scheduler's informer factory.
func WithInformerFactory(i informers.SharedInformerFactory) Option {
	return func(f *Framework) { f.informers = i }
}

var _ Handle = (*Framework)(nil)

// NewFramework instantiates the profile's plugins from the registry. The
// profile is expected to have gone through config.SetDefaults (its
// multiPoint set holds every enabled plugin); a nil profile means the
// default profile.
func NewFramework(registry Registry, profile *config.Profile, opts ...Option) (*Framework, error) {
	if profile == nil {
		profile = &config.Default().Profiles[0]
	}
	plugins := profile.Plugins
	if plugins == nil {
		plugins = &config.Plugins{MultiPoint: config.PluginSet{Enabled: config.DefaultPlugins()}}
	}
	f := &Framework{
		profileName: profile.SchedulerName,
		percentage:  profile.PercentageOfNodesToScore,
		plugins:     map[string]Plugin{},
		weights:     map[string]int64{},
		snapshot:    &Snapshot{},
	}
	for _, o := range opts {
		o(f)
	}
	multiWeight := map[string]int32{}
	// Instantiate every plugin named anywhere, once.
	var names []string
	for _, set := range []config.PluginSet{plugins.MultiPoint, plugins.PreFilter, plugins.Filter, plugins.PostFilter, plugins.PreScore, plugins.Score, plugins.Reserve, plugins.PreBind} {
		for _, p := range set.Enabled {
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	}
	for _, p := range plugins.MultiPoint.Enabled {
		multiWeight[p.Name] = p.Weight
	}
	for _, name := range names {
		factory, ok := registry[name]
		if !ok {
			return nil, fmt.Errorf("profile %q: plugin %q is not registered", f.profileName, name)
		}
		pl, err := factory(profile.Args(name), f)
		if err != nil {
			return nil, fmt.Errorf("profile %q: plugin %q: %w", f.profileName, name, err)
		}
		f.plugins[name] = pl
	}

	// For each extension point: the multiPoint plugins that implement it,
	// merged with the point's own set.
	point := func(set config.PluginSet, implements func(Plugin) bool) ([]config.Plugin, error) {
		var base config.PluginSet
		for _, p := range plugins.MultiPoint.Enabled {
			if implements(f.plugins[p.Name]) {
				base.Enabled = append(base.Enabled, p)
			}
		}
		merged := config.MergePluginSet(base, set)
		seen := sets.New[string]()
		for _, p := range merged.Enabled {
			if seen.Has(p.Name) {
				return nil, fmt.Errorf("profile %q: plugin %q enabled twice", f.profileName, p.Name)
			}
			seen.Insert(p.Name)
			if !implements(f.plugins[p.Name]) {
				return nil, fmt.Errorf("profile %q: plugin %q does not implement the extension point it is enabled at", f.profileName, p.Name)
			}
		}
		return merged.Enabled, nil
	}
	is := func(check func(Plugin) bool) func(Plugin) bool { return check }
	var err error
	var list []config.Plugin
	if list, err = point(plugins.PreFilter, is(func(p Plugin) bool { _, ok := p.(PreFilterPlugin); return ok })); err != nil {
		return nil, err
	}
	for _, p := range list {
		f.preFilter = append(f.preFilter, f.plugins[p.Name].(PreFilterPlugin))
	}
	if list, err = point(plugins.Filter, is(func(p Plugin) bool { _, ok := p.(FilterPlugin); return ok })); err != nil {
		return nil, err
	}
	for _, p := range list {
		f.filter = append(f.filter, f.plugins[p.Name].(FilterPlugin))
	}
	if list, err = point(plugins.PostFilter, is(func(p Plugin) bool { _, ok := p.(PostFilterPlugin); return ok })); err != nil {
		return nil, err
	}
	for _, p := range list {
		f.postFilter = append(f.postFilter, f.plugins[p.Name].(PostFilterPlugin))
	}
	if list, err = point(plugins.PreScore, is(func(p Plugin) bool { _, ok := p.(PreScorePlugin); return ok })); err != nil {
		return nil, err
	}
	for _, p := range list {
		f.preScore = append(f.preScore, f.plugins[p.Name].(PreScorePlugin))
	}
	if list, err = point(plugins.Score, is(func(p Plugin) bool { _, ok := p.(ScorePlugin); return ok })); err != nil {
		return nil, err
	}
	for _, p := range list {
		f.score = append(f.score, f.plugins[p.Name].(ScorePlugin))
		w := p.Weight
		if w == 0 {
			w = multiWeight[p.Name]
		}
		if w == 0 {
			w = 1
		}
		f.weights[p.Name] = int64(w)
	}
	if list, err = point(plugins.Reserve, is(func(p Plugin) bool { _, ok := p.(ReservePlugin); return ok })); err != nil {
		return nil, err
	}
	for _, p := range list {
		f.reserve = append(f.reserve, f.plugins[p.Name].(ReservePlugin))
	}
	if list, err = point(plugins.PreBind, is(func(p Plugin) bool { _, ok := p.(PreBindPlugin); return ok })); err != nil {
		return nil, err
	}
	for _, p := range list {
		f.preBind = append(f.preBind, f.plugins[p.Name].(PreBindPlugin))
	}
	return f, nil
}

// ClientSet implements Handle.
func (f *Framework) ClientSet() kubernetes.Interface { return f.client }

// SharedInformerFactory implements Handle.
func (f *Framework) SharedInformerFactory() informers.SharedInformerFactory { return f.informers }

// ProfileName is the profile's schedulerName.
func (f *Framework) ProfileName() string { return f.profileName }

// PercentageOfNodesToScore is the profile's setting (nil: adaptive).
func (f *Framework) PercentageOfNodesToScore() *int32 { return f.percentage }

// SetSnapshot sets the snapshot the next cycle runs on.
func (f *Framework) SetSnapshot(s *Snapshot) { f.snapshot = s }

// Snapshot implements Handle.
func (f *Framework) Snapshot() *Snapshot { return f.snapshot }

// Plugin returns an instantiated plugin by name.
func (f *Framework) Plugin(name string) Plugin { return f.plugins[name] }

// Plugins returns all instantiated plugins.
func (f *Framework) Plugins() map[string]Plugin { return f.plugins }

// ScoreWeight returns a score plugin's weight (0 if not scoring).
func (f *Framework) ScoreWeight(name string) int64 { return f.weights[name] }

// FilterPluginNames lists the filters in the order they run.
func (f *Framework) FilterPluginNames() []string {
	out := make([]string, len(f.filter))
	for i, p := range f.filter {
		out[i] = p.Name()
	}
	return out
}

// ScorePluginNames lists the score plugins.
func (f *Framework) ScorePluginNames() []string {
	out := make([]string, len(f.score))
	for i, p := range f.score {
		out[i] = p.Name()
	}
	return out
}

// HasFilterPlugins reports any filter.
func (f *Framework) HasFilterPlugins() bool { return len(f.filter) > 0 }

// HasScorePlugins reports any score plugin.
func (f *Framework) HasScorePlugins() bool { return len(f.score) > 0 }

// HasPostFilterPlugins reports any post-filter plugin.
func (f *Framework) HasPostFilterPlugins() bool { return len(f.postFilter) > 0 }

// EventsToRegister returns, per plugin that can reject pods, the events
// after which a pod it rejected is worth retrying.
func (f *Framework) EventsToRegister() map[string][]ClusterEvent {
	out := map[string][]ClusterEvent{}
	for name, p := range f.plugins {
		if e, ok := p.(EnqueueExtensions); ok {
			out[name] = e.EventsToRegister()
		}
	}
	return out
}

// RunPreFilterPlugins runs the PreFilter plugins in order, stopping at the
// first that rejects the pod. Plugins that return Skip are recorded in
// state.SkipFilterPlugins and their Filter is not run. The results'
// node sets are intersected.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod) (_ *PreFilterResult, st *Status) {
	defer f.timed("PreFilter", time.Now(), &st)
	var result *PreFilterResult
	var narrowing []string
	skip := sets.New[string]()
	nodes := f.snapshot.List()
	for _, pl := range f.preFilter {
		start := f.pluginStart(state)
		r, s := pl.PreFilter(ctx, state, pod, nodes)
		f.pluginDone(pl.Name(), "PreFilter", start, s)
		if s.IsSkip() {
			skip.Insert(pl.Name())
			continue
		}
		if !s.IsSuccess() {
			s.WithPlugin(pl.Name())
			if s.IsRejected() {
				return nil, s
			}
			return nil, AsStatus(fmt.Errorf("running PreFilter plugin %q: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
		if !r.AllNodes() {
			narrowing = append(narrowing, pl.Name())
		}
		result = result.Merge(r)
		if !result.AllNodes() && len(result.NodeNames) == 0 {
			msg := fmt.Sprintf("node(s) didn't satisfy plugin(s) %v simultaneously", narrowing)
			if len(narrowing) == 1 {
				msg = fmt.Sprintf("node(s) didn't satisfy plugin %v", narrowing[0])
			}
			state.SkipFilterPlugins = skip
			return result, NewStatus(UnschedulableAndUnresolvable, msg).WithPlugin(pl.Name())
		}
	}
	state.SkipFilterPlugins = skip
	return result, nil
}

// RunFilterPlugins runs the filters on one node, stopping at the first
// that does not pass; its status names the plugin.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status {
	for _, pl := range f.filter {
		if state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		start := f.pluginStart(state)
		s := pl.Filter(ctx, state, pod, nodeInfo)
		f.pluginDone(pl.Name(), "Filter", start, s)
		if !s.IsSuccess() {
			if !s.IsRejected() {
				s = AsStatus(fmt.Errorf("running %q filter plugin: %w", pl.Name(), s.AsError()))
			}
			return s.WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunFilterPluginsWithNominatedPods implements Handle: the filters must
// pass both with the node's nominated pods of equal or higher priority
// added (so that a lower-priority pod does not take what preemption freed
// for them) and without them (so that a pod with affinity to them does
// not depend on pods that are not there yet).
func (f *Framework) RunFilterPluginsWithNominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status {
	added, stateWith, infoWith, err := f.addNominatedPods(ctx, pod, state, nodeInfo)
	if err != nil {
		return AsStatus(err)
	}
	s := f.RunFilterPlugins(ctx, stateWith, pod, infoWith)
	if !s.IsSuccess() || !added {
		return s
	}
	return f.RunFilterPlugins(ctx, state, pod, nodeInfo)
}

func (f *Framework) addNominatedPods(ctx context.Context, pod *v1.Pod, state *CycleState, nodeInfo *NodeInfo) (bool, *CycleState, *NodeInfo, error) {
	if nodeInfo.Node() == nil || f.snapshot == nil {
		return false, state, nodeInfo, nil
	}
	nominated := f.snapshot.NominatedPods[nodeInfo.Node().Name]
	if len(nominated) == 0 {
		return false, state, nodeInfo, nil
	}
	var infoOut *NodeInfo
	var stateOut *CycleState
	prio := PodPriority(pod)
	for _, pi := range nominated {
		if pi.Pod.UID == pod.UID || PodPriority(pi.Pod) < prio {
			continue
		}
		if infoOut == nil {
			infoOut, stateOut = nodeInfo.Clone(), state.Clone()
		}
		infoOut.AddPodInfo(pi)
		if s := f.RunPreFilterExtensionAddPod(ctx, stateOut, pod, pi, infoOut); !s.IsSuccess() {
			return false, state, nodeInfo, s.AsError()
		}
	}
	if infoOut == nil {
		return false, state, nodeInfo, nil
	}
	return true, stateOut, infoOut, nil
}

// RunPreFilterExtensionAddPod implements Handle.
func (f *Framework) RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status {
	for _, pl := range f.preFilter {
		ext := pl.PreFilterExtensions()
		if ext == nil || state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		if s := ext.AddPod(ctx, state, podToSchedule, podInfoToAdd, nodeInfo); !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running AddPod on PreFilter plugin %q: %w", pl.Name(), s.AsError()))
		}
	}
	return nil
}

// RunPreFilterExtensionRemovePod implements Handle.
func (f *Framework) RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status {
	for _, pl := range f.preFilter {
		ext := pl.PreFilterExtensions()
		if ext == nil || state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		if s := ext.RemovePod(ctx, state, podToSchedule, podInfoToRemove, nodeInfo); !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running RemovePod on PreFilter plugin %q: %w", pl.Name(), s.AsError()))
		}
	}
	return nil
}

// RunPostFilterPlugins runs the PostFilter plugins until one succeeds. If
// none does, the status is Unschedulable with their reasons.
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, filtered *NodeToStatus) (_ *PostFilterResult, st *Status) {
	defer f.timed("PostFilter", time.Now(), &st)
	var reasons []string
	var result *PostFilterResult
	for _, pl := range f.postFilter {
		start := f.pluginStart(state)
		r, s := pl.PostFilter(ctx, state, pod, filtered)
		f.pluginDone(pl.Name(), "PostFilter", start, s)
		if s.IsSuccess() {
			return r, s
		}
		if !s.IsRejected() {
			return nil, s.WithPlugin(pl.Name())
		}
		if r != nil {
			result = r
		}
		reasons = append(reasons, s.Reasons()...)
	}
	return result, NewStatus(Unschedulable, reasons...)
}

// RunPreScorePlugins runs the PreScore plugins; those that return Skip are
// recorded in state.SkipScorePlugins.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) (st *Status) {
	defer f.timed("PreScore", time.Now(), &st)
	skip := sets.New[string]()
	for _, pl := range f.preScore {
		start := f.pluginStart(state)
		s := pl.PreScore(ctx, state, pod, nodes)
		f.pluginDone(pl.Name(), "PreScore", start, s)
		if s.IsSkip() {
			skip.Insert(pl.Name())
			continue
		}
		if !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running PreScore plugin %q: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
	}
	state.SkipScorePlugins = skip
	return nil
}

// NodePluginScores is one node's total score and its parts.
type NodePluginScores struct {
	Name       string
	Scores     []PluginScore
	TotalScore int64
}

// PluginScore is one plugin's weighted score of a node.
type PluginScore struct {
	Name  string
	Score int64
}

// RunScorePlugins scores each node with each score plugin, normalizes,
// weights and sums.
func (f *Framework) RunScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) (_ []NodePluginScores, st *Status) {
	defer f.timed("Score", time.Now(), &st)
	out := make([]NodePluginScores, len(nodes))
	var active []ScorePlugin
	for _, pl := range f.score {
		if !state.SkipScorePlugins.Has(pl.Name()) {
			active = append(active, pl)
		}
	}
	for i, ni := range nodes {
		out[i] = NodePluginScores{Name: ni.Node().Name, Scores: make([]PluginScore, 0, len(active))}
	}
	scores := make([]NodeScore, len(nodes))
	for _, pl := range active {
		for i, ni := range nodes {
			start := f.pluginStart(state)
			s, st := pl.Score(ctx, state, pod, ni)
			f.pluginDone(pl.Name(), "Score", start, st)
			if !st.IsSuccess() {
				return nil, AsStatus(fmt.Errorf("running Score plugin %q: %w", pl.Name(), st.AsError())).WithPlugin(pl.Name())
			}
			scores[i] = NodeScore{Name: ni.Node().Name, Score: s}
		}
		if ext := pl.ScoreExtensions(); ext != nil {
			start := f.pluginStart(state)
			st := ext.NormalizeScore(ctx, state, pod, scores)
			f.pluginDone(pl.Name(), "ScoreExtensionNormalize", start, st)
			if !st.IsSuccess() {
				return nil, AsStatus(fmt.Errorf("running NormalizeScore of %q: %w", pl.Name(), st.AsError())).WithPlugin(pl.Name())
			}
		}
		w := f.weights[pl.Name()]
		for i := range scores {
			s := scores[i].Score
			if s > MaxNodeScore || s < MinNodeScore {
				return nil, AsStatus(fmt.Errorf("plugin %q returned an invalid score %d for node %q", pl.Name(), s, scores[i].Name))
			}
			out[i].Scores = append(out[i].Scores, PluginScore{Name: pl.Name(), Score: s * w})
			out[i].TotalScore += s * w
		}
	}
	return out, nil
}

// RunReservePlugins runs the Reserve plugins in order, stopping at the
// first that fails; the caller then runs RunUnreservePlugins.
func (f *Framework) RunReservePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) (st *Status) {
	defer f.timed("Reserve", time.Now(), &st)
	for _, pl := range f.reserve {
		start := f.pluginStart(state)
		s := pl.Reserve(ctx, state, pod, nodeName)
		f.pluginDone(pl.Name(), "Reserve", start, s)
		if !s.IsSuccess() {
			if s.IsRejected() {
				return s.WithPlugin(pl.Name())
			}
			return AsStatus(fmt.Errorf("running Reserve plugin %q: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunUnreservePlugins undoes every Reserve plugin's reservation, in
// reverse order (as upstream).
func (f *Framework) RunUnreservePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) {
	var st *Status
	defer f.timed("Unreserve", time.Now(), &st)
	for i := len(f.reserve) - 1; i >= 0; i-- {
		start := f.pluginStart(state)
		f.reserve[i].Unreserve(ctx, state, pod, nodeName)
		f.pluginDone(f.reserve[i].Name(), "Unreserve", start, nil)
	}
}

// RunPreBindPlugins runs the PreBind plugins in order, stopping at the
// first that fails. It may run concurrently with the next scheduling
// cycle; plugins guard what they share.
func (f *Framework) RunPreBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) (st *Status) {
	defer f.timed("PreBind", time.Now(), &st)
	for _, pl := range f.preBind {
		start := f.pluginStart(state)
		s := pl.PreBind(ctx, state, pod, nodeName)
		f.pluginDone(pl.Name(), "PreBind", start, s)
		if !s.IsSuccess() {
			if s.IsRejected() {
				return s.WithPlugin(pl.Name())
			}
			return AsStatus(fmt.Errorf("running PreBind plugin %q: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
	}
	return nil
}
