package podautoscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"plainkube.dev/plainkube/internal/api/metricsapi"
	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "podautoscaler"

// Component is the source of the controller's events, as upstream's.
const Component = "horizontal-pod-autoscaler"

// DefaultSyncPeriod is upstream's --horizontal-pod-autoscaler-sync-period.
const DefaultSyncPeriod = 15 * time.Second

// The metrics APIs of Pods, Object and External metrics.
const (
	customMetricsGroup   = "custom.metrics.k8s.io"
	externalMetricsGroup = "external.metrics.k8s.io"
)

// Controller is the HorizontalPodAutoscaler controller. Set its exported
// fields before Run.
type Controller struct {
	controller.Base
	// SyncPeriod is how often each HPA is looked at (DefaultSyncPeriod).
	SyncPeriod time.Duration
	// Settings are the calculation's flags (DefaultSettings).
	Settings Settings
	// Clock is the controller's time (the real clock by default).
	Clock clock.PassiveClock

	cfg *rest.Config
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's clients from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base, SyncPeriod: DefaultSyncPeriod, Settings: DefaultSettings, Clock: clock.RealClock{}, cfg: cfg}, nil
}

// loop is one Run of the controller.
type loop struct {
	ctx      context.Context // the Run's, for the reads observe makes
	client   kubernetes.Interface
	scales   scale.ScalesGetter
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	hpas     autoscalinglisters.HorizontalPodAutoscalerLister
	pods     corelisters.PodLister
	rec      record.EventRecorder
	log      *slog.Logger
	clock    clock.PassiveClock
	period   time.Duration
	settings Settings

	mu        sync.Mutex
	histories map[string]History
	selectors map[string]map[string]labels.Selector // namespace → HPA key → its target's selector

	groups groupCache
}

// Run watches HPAs and Pods and syncs each HPA every SyncPeriod with
// workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	period := c.SyncPeriod
	if period <= 0 {
		period = DefaultSyncPeriod
	}
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	// As upstream: a failed sync is tried again after the sync period, not
	// sooner.
	queue := reconcile.NewQueueWithRateLimiter[string]("horizontalpodautoscaler", fixedInterval(period))
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger,
		Shared: c.Informers, Queue: queue})
	l, err := c.newLoop(ctx, b, period, clk)
	if err != nil {
		return err
	}
	hpaInf := b.Informers().Autoscaling().V2().HorizontalPodAutoscalers()
	b.For(hpaInf.Informer(), autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler")).
		OnDelete(l.forget).
		// The controller's own status writes wait for the next period; a
		// change of spec is looked at at once.
		DelayUpdates(func(old, cur any) time.Duration {
			o, ok1 := old.(*autoscalingv2.HorizontalPodAutoscaler)
			n, ok2 := cur.(*autoscalingv2.HorizontalPodAutoscaler)
			if ok1 && ok2 && o.Generation != n.Generation {
				return 0
			}
			return period
		}).
		WaitsFor(b.SharedInformers().Core().V1().Pods().Informer())
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		l.rec = rec
		return l.reconcile
	})
}

// newLoop makes the clients and listers of one Run.
func (c *Controller) newLoop(ctx context.Context, b *controller.Builder, period time.Duration, clk clock.PassiveClock) (*loop, error) {
	disco := memory.NewMemCacheClient(c.Client.Discovery())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(disco)
	scales, err := scale.NewForConfig(c.cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disco))
	if err != nil {
		return nil, err
	}
	return &loop{ctx: ctx, client: c.Client, scales: scales, mapper: mapper,
		hpas: b.Informers().Autoscaling().V2().HorizontalPodAutoscalers().Lister(),
		pods: b.SharedInformers().Core().V1().Pods().Lister(),
		log:  b.Logger(), clock: clk, period: period, settings: c.Settings,
		histories: map[string]History{}, selectors: map[string]map[string]labels.Selector{},
		groups: groupCache{client: c.Client, ttl: period}}, nil
}

// reconcile is one sync of the HPA key names.
func (l *loop) reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	return controller.Shape[State, Plan]{Observe: l.observe, Plan: PlanSync, Apply: l.apply, Log: l.log}.Reconcile(ctx, key)
}

// fixedInterval is a rate limiter that always waits d.
type fixedInterval time.Duration

func (f fixedInterval) When(string) time.Duration { return time.Duration(f) }
func (fixedInterval) NumRequeues(string) int      { return 1 }
func (fixedInterval) Forget(string)               {}

var _ workqueue.TypedRateLimiter[string] = fixedInterval(0)

// forget drops what the controller remembers of a deleted HPA.
func (l *loop) forget(key string) {
	ns, _, _ := cache.SplitMetaNamespaceKey(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.histories, key)
	delete(l.selectors[ns], key)
}

// observe reads one HPA, its target's scale, pods and samples.
func (l *loop) observe(key string) (State, bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return State{}, false, nil
	}
	hpa, err := l.hpas.HorizontalPodAutoscalers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		l.forget(key)
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	ctx := l.ctx
	st := State{HPA: hpa, Now: l.clock.Now(), Settings: l.settings}
	l.mu.Lock()
	st.History = l.histories[key].clone()
	l.mu.Unlock()

	st.Scale, st.TargetResource, st.ScaleErr = l.getScale(ctx, hpa)
	if st.ScaleErr != nil {
		return st, true, nil
	}
	sel, err := labels.Parse(st.Scale.Status.Selector)
	if st.Scale.Status.Selector == "" || err != nil {
		return st, true, nil
	}
	if st.Pods, err = l.pods.Pods(ns).List(sel); err != nil {
		return State{}, false, err
	}
	st.SelectingHPAs = l.selecting(key, ns, sel, st.Pods)
	needs := map[autoscalingv2.MetricSourceType]bool{}
	for _, m := range hpa.Spec.Metrics {
		needs[m.Type] = true
	}
	if needs[autoscalingv2.ResourceMetricSourceType] || needs[autoscalingv2.ContainerResourceMetricSourceType] {
		st.PodMetrics, st.PodMetricsErr = l.podMetrics(ctx, ns, sel)
	}
	if needs[autoscalingv2.PodsMetricSourceType] || needs[autoscalingv2.ObjectMetricSourceType] {
		st.CustomMetricsErr = l.groups.unreadable(ctx, customMetricsGroup, "custom")
	}
	if needs[autoscalingv2.ExternalMetricSourceType] {
		st.ExternalMetricsErr = l.groups.unreadable(ctx, externalMetricsGroup, "external")
	}
	return st, true, nil
}

// getScale is the /scale of the HPA's target, whatever its kind: the
// kind's resources from discovery, the first whose scale can be had.
func (l *loop) getScale(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv1.Scale, schema.GroupResource, error) {
	ref := hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupResource{}, fmt.Errorf("invalid API version in scale target reference: %v", err)
	}
	mappings, err := l.mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		return nil, schema.GroupResource{}, err
	}
	var first error
	for i, m := range mappings {
		gr := m.Resource.GroupResource()
		sc, err := l.scales.Scales(hpa.Namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return sc, gr, nil
		}
		if i == 0 {
			first = err
		}
	}
	if first == nil {
		first = fmt.Errorf("unrecognized resource")
	}
	return nil, schema.GroupResource{}, first
}

// selecting records key's selector and returns the keys of the HPAs in
// namespace whose selector selects one of pods (at most two, sorted).
func (l *loop) selecting(key, namespace string, sel labels.Selector, pods []*corev1.Pod) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ns := l.selectors[namespace]
	if ns == nil {
		ns = map[string]labels.Selector{}
		l.selectors[namespace] = ns
	}
	ns[key] = sel
	seen := map[string]bool{}
	var keys []string
	for _, p := range pods {
		set := labels.Set(p.Labels)
		str := set.String()
		if seen[str] {
			continue
		}
		seen[str] = true
		for k, s := range ns {
			if !slices.Contains(keys, k) && s.Matches(set) {
				keys = append(keys, k)
				if len(keys) == 2 {
					slices.Sort(keys)
					return keys
				}
			}
		}
	}
	return keys
}

// podMetrics lists the metrics.k8s.io PodMetrics of the pods sel selects.
func (l *loop) podMetrics(ctx context.Context, namespace string, sel labels.Selector) ([]metricsapi.PodMetrics, error) {
	raw, err := l.client.CoreV1().RESTClient().Get().
		AbsPath("/apis", metricsapi.GroupVersion.Group, metricsapi.GroupVersion.Version, "namespaces", namespace, "pods").
		Param("labelSelector", sel.String()).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var list metricsapi.PodMetricsList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// apply rescales the target if the plan says so, then records the events
// and writes the status.
func (l *loop) apply(ctx context.Context, st State, plan Plan) (reconcile.Result, error) {
	var rescaleErr error
	if plan.Rescale {
		rescaleErr = l.rescale(ctx, st, plan.Desired)
	}
	status, events, hist := plan.Finish(st, rescaleErr)
	l.mu.Lock()
	l.histories[controller.ObjectKey(st.HPA)] = hist
	l.mu.Unlock()
	for _, e := range events {
		l.rec.Event(st.HPA, e.Type, e.Reason, e.Message)
	}
	if plan.Rescale && rescaleErr == nil {
		l.log.Info("rescaled", "namespace", st.HPA.Namespace, "name", st.HPA.Name,
			"currentReplicas", st.Scale.Spec.Replicas, "desiredReplicas", plan.Desired, "reason", plan.Reason)
	}
	if StatusChanged(st.HPA, &status) {
		hpa := st.HPA.DeepCopy()
		hpa.Status = status
		if _, err := l.client.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil {
			if !apierrors.IsConflict(err) {
				l.rec.Event(st.HPA, corev1.EventTypeWarning, "FailedUpdateStatus", err.Error())
			}
			return reconcile.Result{}, fmt.Errorf("failed to update status for %s: %w", hpa.Name, err)
		}
	}
	if rescaleErr != nil {
		return reconcile.Result{}, fmt.Errorf("failed to rescale %s: %w", reference(st.HPA), rescaleErr)
	}
	if plan.Err != nil {
		return reconcile.Result{}, plan.Err
	}
	return reconcile.Result{RequeueAfter: l.period}, nil
}

// rescale writes desired to the target's /scale, on a conflict with the
// scale read again.
func (l *loop) rescale(ctx context.Context, st State, desired int32) error {
	sc, gr := st.Scale.DeepCopy(), st.TargetResource
	scales := l.scales.Scales(st.HPA.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc.Spec.Replicas = desired
		_, err := scales.Update(ctx, gr, sc, metav1.UpdateOptions{})
		if err != nil {
			if latest, getErr := scales.Get(ctx, gr, sc.Name, metav1.GetOptions{}); getErr == nil {
				sc = latest
			}
		}
		return err
	})
}

// groupCache answers whether an API group is served, from discovery at
// most once per ttl.
type groupCache struct {
	client kubernetes.Interface
	ttl    time.Duration

	mu      sync.Mutex
	fetched time.Time
	served  map[string]bool
	err     error
}

// unreadable is why the controller cannot read metrics of group (what
// names the API in messages: "custom", "external"), nil never: plainkube
// does not read them yet even where an APIService serves them.
func (g *groupCache) unreadable(ctx context.Context, group, what string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.served == nil || time.Since(g.fetched) > g.ttl {
		g.fetched = time.Now()
		groups, err := g.client.Discovery().ServerGroups()
		g.err = err
		g.served = map[string]bool{}
		if groups != nil {
			for _, gr := range groups.Groups {
				g.served[gr.Name] = true
			}
		}
	}
	if g.err != nil && !g.served[group] {
		return g.err
	}
	if !g.served[group] {
		return fmt.Errorf("no %s metrics API (%s) registered", what, group)
	}
	return fmt.Errorf("the %s metrics API (%s) is served, but plainkube's horizontal-pod-autoscaler controller does not read it yet", what, group)
}
