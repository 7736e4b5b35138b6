package nodelifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "nodelifecycle"

// Component is the source of the events the controller records, as
// upstream's.
const Component = "node-controller"

// Defaults, as upstream's kube-controller-manager flags.
const (
	DefaultGracePeriod            = 40 * time.Second // --node-monitor-grace-period
	DefaultStartupGracePeriod     = 60 * time.Second // --node-startup-grace-period
	DefaultEvictionQPS            = 0.1              // --node-eviction-rate
	DefaultSecondaryEvictionQPS   = 0.01             // --secondary-node-eviction-rate
	DefaultLargeClusterThreshold  = 50               // --large-cluster-size-threshold
	DefaultUnhealthyZoneThreshold = 0.55             // --unhealthy-zone-threshold
)

// retryPeriod is when a node whose tainting is held back (zone disrupted)
// is looked at again, as upstream's node monitor period.
const retryPeriod = 5 * time.Second

// zoneRefresh is how long a count of every node by zone is reused
// (upstream recomputes every node-monitor-period, 5 s).
const zoneRefresh = time.Second

const podNodeIndex = "spec.nodeName"

var nodeKind = corev1.SchemeGroupVersion.WithKind("Node")

// Controller is the node lifecycle controller.
type Controller struct {
	controller.Base
	// GracePeriod is how long a node may go without a lease renewal or a
	// Ready heartbeat before it is marked Unknown; set before Run.
	GracePeriod time.Duration
	// StartupGracePeriod replaces GracePeriod for a node that never posted
	// a Ready condition; set before Run.
	StartupGracePeriod time.Duration
	// EvictionQPS is how many nodes per second per zone may get a NoExecute
	// taint; SecondaryEvictionQPS applies in a partially disrupted zone of
	// more than LargeClusterThreshold nodes (smaller ones get none). A zone
	// is partially disrupted when more than two and at least
	// UnhealthyZoneThreshold of its nodes are not ready. Set before Run.
	EvictionQPS            float64
	SecondaryEvictionQPS   float64
	LargeClusterThreshold  int
	UnhealthyZoneThreshold float64

	now func() time.Time

	// What the controller remembers between looks (observe reads it,
	// apply records its own writes in it).
	mu           sync.Mutex
	health       map[string]*health
	buckets      map[string]*bucket
	allDisrupted bool
	// zones counts every node by zone, reused for zoneRefresh while no
	// node's readiness is seen to change: counting visits every node, and
	// every heartbeat reconciles a node.
	zones zoneCount
	// taintSeen is when a NoExecute taint was first seen (node/key/effect).
	taintSeen map[string]time.Time
	// marked are the pods marked not ready since their node last was
	// Ready, by node.
	marked map[string]map[types.UID]bool
	// staleNodes and stalePods hold the resourceVersions this controller's
	// own writes replaced: a cache still showing one is behind, and acting
	// on it would repeat the write.
	staleNodes map[string]map[string]bool
	stalePods  map[string]map[types.UID]map[string]bool
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{
		Base:                   base,
		GracePeriod:            DefaultGracePeriod,
		StartupGracePeriod:     DefaultStartupGracePeriod,
		EvictionQPS:            DefaultEvictionQPS,
		SecondaryEvictionQPS:   DefaultSecondaryEvictionQPS,
		LargeClusterThreshold:  DefaultLargeClusterThreshold,
		UnhealthyZoneThreshold: DefaultUnhealthyZoneThreshold,
		now:                    time.Now,
		health:                 map[string]*health{},
		buckets:                map[string]*bucket{},
		taintSeen:              map[string]time.Time{},
		marked:                 map[string]map[types.UID]bool{},
		staleNodes:             map[string]map[string]bool{},
		stalePods:              map[string]map[types.UID]map[string]bool{},
	}, nil
}

// run is one Run of the controller: its listers and logger.
type run struct {
	c          *Controller
	log        *slog.Logger
	nodes      corelisters.NodeLister
	leases     coordinationlisters.LeaseLister
	pods       cache.Indexer
	enqueueAll func()
}

// Run watches Nodes, their Leases (kube-node-lease) and Pods and keeps
// node conditions, taints and pods in line with node health, with workers
// workers, until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	nodeInf := b.SharedInformers().Core().V1().Nodes()
	podInf := b.SharedInformers().Core().V1().Pods()
	leaseInf := b.Informers().InformerFor(&coordinationv1.Lease{}, func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coordinationinformers.NewLeaseInformer(cs, corev1.NamespaceNodeLease, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	})
	if err := reconcile.AddIndexer(podInf.Informer(), podNodeIndex, func(obj any) ([]string, error) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			return []string{pod.Spec.NodeName}, nil
		}
		return nil, nil
	}); err != nil {
		return err
	}
	r := &run{c: c, log: b.Logger(), nodes: nodeInf.Lister(), leases: coordinationlisters.NewLeaseLister(leaseInf.GetIndexer()),
		pods: podInf.Informer().GetIndexer()}
	r.enqueueAll = func() {
		nodes, _ := r.nodes.List(labels.Everything())
		for _, n := range nodes {
			b.Queue().Add(n.Name)
		}
	}
	b.For(nodeInf.Informer(), nodeKind).
		Watches(leaseInf, controller.Added|controller.Updated, func(_, cur any) []string {
			if l, ok := cur.(metav1.Object); ok {
				return []string{l.GetName()}
			}
			return nil
		}).
		Watches(podInf.Informer(), controller.Added|controller.Updated, podNode)
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return controller.Shape[State, Plan]{Observe: r.observe, Plan: plan, Apply: r.apply, Log: r.log}.Reconcile
	})
}

// podNode is the node to look at for a pod event: a pod that lands on a
// node, or whose tolerations or readiness change, matters to its node
// (eviction, readiness on a dead node).
func podNode(oldObj, cur any) []string {
	p, ok := cur.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" {
		return nil
	}
	if o, ok := oldObj.(*corev1.Pod); ok && o.Spec.NodeName == p.Spec.NodeName &&
		apiequality.Semantic.DeepEqual(o.Spec.Tolerations, p.Spec.Tolerations) && podReady(o) == podReady(p) {
		return nil
	}
	return []string{p.Spec.NodeName}
}

// podReady is the status of the pod's Ready condition ("" without one).
func podReady(pod *corev1.Pod) corev1.ConditionStatus {
	if c := podutil.ReadyCondition(pod); c != nil {
		return c.Status
	}
	return ""
}

func (c *Controller) settings() Settings {
	return Settings{
		GracePeriod: c.GracePeriod, StartupGracePeriod: c.StartupGracePeriod,
		UnhealthyZoneThreshold: c.UnhealthyZoneThreshold,
		Rates:                  rates{qps: c.EvictionQPS, secondaryQPS: c.SecondaryEvictionQPS, largeClusterThreshold: c.LargeClusterThreshold},
	}
}

// observe reads a node, its lease and its pods from the caches and folds
// them into what the controller remembers (its health, when its taints
// were first seen); ok is false when the node is gone (and forgotten).
func (r *run) observe(name string) (State, bool, error) {
	c := r.c
	now := c.now()
	node, err := r.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		r.forget(name, now)
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	st := State{Node: node, Now: now, Settings: c.settings()}
	if c.nodeStale(node) {
		st.Behind = true
		return st, true, nil
	}
	lease, err := r.leases.Leases(corev1.NamespaceNodeLease).Get(name)
	if err != nil {
		lease = nil
	}
	objs, err := r.pods.ByIndex(podNodeIndex, name)
	if err != nil {
		return State{}, false, err
	}
	st.OtherNodes = r.otherNodes(node, now)
	c.mu.Lock()
	defer c.mu.Unlock()
	h := observe(c.health[name], node, lease, now)
	c.health[name] = h
	st.Probe, st.LastReady = h.probe, h.lastReady
	st.Marked = c.markedLocked(name, objs)
	st.Bucket = *c.bucketLocked(zoneKey(node), now)
	st.TaintStarts = c.taintStartsLocked(name, node.Spec.Taints, now)
	st.Pods = c.freshPodsLocked(name, objs)
	return st, true, nil
}

// markedLocked are the pods on the node marked not ready, forgetting
// those no longer there.
func (c *Controller) markedLocked(name string, objs []any) map[types.UID]bool {
	was := c.marked[name]
	if len(was) == 0 {
		return nil
	}
	now := map[types.UID]bool{}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && was[p.UID] {
			now[p.UID] = true
		}
	}
	c.marked[name] = now
	return maps.Clone(now)
}

// forget drops what the controller remembers of a deleted node, which
// no longer counts in its zone.
func (r *run) forget(name string, now time.Time) {
	c := r.c
	c.mu.Lock()
	delete(c.health, name)
	delete(c.staleNodes, name)
	delete(c.stalePods, name)
	delete(c.marked, name)
	c.forgetTaintsLocked(name, nil)
	c.zones.set(name, nil)
	_, all := statesOf(c.zones.byZone, c.UnhealthyZoneThreshold)
	c.mu.Unlock()
	r.recordDisruption(all, now)
}

// bucketLocked is the token bucket of a zone.
func (c *Controller) bucketLocked(zone string, now time.Time) *bucket {
	b := c.buckets[zone]
	if b == nil {
		b = newBucket(now)
		c.buckets[zone] = b
	}
	return b
}

// freshPodsLocked are the pods of objs on the node but those whose cached
// version this controller's own writes replaced.
func (c *Controller) freshPodsLocked(name string, objs []any) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, len(objs))
	stale := c.stalePods[name]
	behind := map[types.UID]map[string]bool{}
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Spec.NodeName != name {
			continue
		}
		if stale[p.UID][p.ResourceVersion] {
			behind[p.UID] = stale[p.UID] // already acted on; the cache has not caught up
			continue
		}
		pods = append(pods, p)
	}
	c.stalePods[name] = behind
	return pods
}

// zoneCount counts nodes by zone, ready or not, as of a look at every
// node (at), kept up to date with this controller's own writes.
type zoneCount struct {
	at     time.Time
	byZone map[string]readyCounts
	// nodes is how each node was counted.
	nodes map[string]countedAs
}

type countedAs struct {
	status  corev1.ConditionStatus
	zone    string
	ready   bool
	counted bool
}

// set counts node (nil: gone) under its name instead of how it was.
func (z *zoneCount) set(name string, node *corev1.Node) {
	if z.byZone == nil {
		return
	}
	if was, ok := z.nodes[name]; ok && was.counted {
		addTo(z.byZone, was.zone, was.ready, -1)
	}
	delete(z.nodes, name)
	if node == nil {
		return
	}
	zone, ready, ok := counted(node)
	z.nodes[name] = countedAs{status: readyStatus(node), zone: zone, ready: ready, counted: ok}
	if ok {
		addTo(z.byZone, zone, ready, 1)
	}
}

// otherNodes counts every node but node by zone: from the last count
// while it is fresh and node's readiness is as counted, else from a new
// look at every node.
func (r *run) otherNodes(node *corev1.Node, now time.Time) map[string]readyCounts {
	c := r.c
	c.mu.Lock()
	fresh := c.zones.byZone != nil && now.Sub(c.zones.at) < zoneRefresh && now.Sub(c.zones.at) >= 0 &&
		c.zones.nodes[node.Name].status == readyStatus(node)
	c.mu.Unlock()
	if !fresh {
		nodes, _ := r.nodes.List(labels.Everything())
		z := zoneCount{at: now, byZone: map[string]readyCounts{}, nodes: make(map[string]countedAs, len(nodes))}
		for _, n := range nodes {
			z.set(n.Name, n)
		}
		c.mu.Lock()
		c.zones = z
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	others := maps.Clone(c.zones.byZone)
	if was, ok := c.zones.nodes[node.Name]; ok && was.counted {
		addTo(others, was.zone, was.ready, -1)
	}
	return others
}

// recordDisruption records whether every zone is fully disrupted and acts
// on a change: every node is looked at again, and when leaving full
// disruption every node gets a fresh grace period (as upstream: the
// silence was most likely the control plane's).
func (r *run) recordDisruption(all bool, now time.Time) {
	c := r.c
	c.mu.Lock()
	was := c.allDisrupted
	c.allDisrupted = all
	if was && !all {
		for _, h := range c.health {
			h.probe, h.readyTransition = now, now
		}
	}
	c.mu.Unlock()
	if was == all {
		return
	}
	if all {
		r.log.Info("every zone is fully disrupted: no NoExecute taints until some node is ready")
	} else {
		r.log.Info("some node is ready again: leaving full disruption")
	}
	r.enqueueAll()
}

// apply writes a node's plan: its Unknown conditions, its taints (taking
// the zone's token for a NoExecute one), its pods marked not ready, the
// evictions; and records its own writes in what the controller
// remembers.
func (r *run) apply(ctx context.Context, s State, p Plan) (reconcile.Result, error) {
	c, name, node := r.c, s.Node.Name, s.Node
	if s.Behind {
		return p.Result, nil
	}
	if p.Status != nil {
		written, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, p.Status, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("marking node %s unknown: %w", name, err)
		}
		c.replacedNode(node)
		r.log.Info("node stopped posting status; conditions set to Unknown", "node", name, "silentFor", s.Now.Sub(s.Probe).Round(time.Millisecond))
		node = written
		c.mu.Lock()
		if h := c.health[name]; h != nil {
			if rc := readyCondition(written); rc != nil {
				cp := *rc
				h.ready = &cp
			}
			h.readyTransition = s.Now
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.zones.set(name, node)
	c.mu.Unlock()
	r.recordDisruption(p.AllDisrupted, s.Now)

	if len(p.Added)+len(p.Removed) > 0 {
		var took *bucket // a token to give back if the write fails
		if p.TakeToken {
			c.mu.Lock()
			b := c.bucketLocked(zoneKey(node), s.Now)
			ok, wait := b.take(s.Now, p.TaintQPS)
			c.mu.Unlock()
			if !ok {
				// Another node of the zone took the token since observe.
				return reconcile.Result{RequeueAfter: wait}, nil
			}
			took = b
		}
		tainted := node.DeepCopy()
		tainted.Spec.Taints = p.Taints
		written, err := c.Client.CoreV1().Nodes().Update(ctx, tainted, metav1.UpdateOptions{})
		if err != nil {
			if took != nil {
				c.mu.Lock()
				took.refund()
				c.mu.Unlock()
			}
			return reconcile.Result{}, fmt.Errorf("updating taints of node %s: %w", name, err)
		}
		c.replacedNode(node)
		r.log.Info("node taints changed", "node", name, "added", taintList(p.Added), "removed", taintList(p.Removed))
		c.mu.Lock()
		c.taintStartsLocked(name, written.Spec.Taints, s.Now)
		c.mu.Unlock()
	}

	marked, err := c.markPodsNotReady(ctx, r.log, p.MarkNotReady, s.Now)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.mu.Lock()
	if h := c.health[name]; h != nil {
		h.lastReady = p.Ready
	}
	if p.Ready == corev1.ConditionTrue {
		delete(c.marked, name)
	}
	c.mu.Unlock()

	for _, pod := range p.Evict {
		if err := c.evict(ctx, pod, marked[pod.UID], s.Now); err != nil {
			return reconcile.Result{}, err
		}
		r.log.Info("evicted pod from node with NoExecute taint", "namespace", pod.Namespace, "pod", pod.Name, "node", name)
	}
	return p.Result, nil
}

// taintStartsLocked returns when each NoExecute taint of a node (by key)
// began to apply, as upstream's taint manager counts tolerationSeconds:
// from when the controller first saw the taint; or, for a taint clearly
// older than that (the controller restarted), from its timeAdded (which
// the API keeps to the second only, hence not used for fresh taints).
func (c *Controller) taintStartsLocked(node string, taints []corev1.Taint, now time.Time) map[string]time.Time {
	c.forgetTaintsLocked(node, taints)
	seen := map[string]time.Time{}
	for _, t := range taints {
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		k := node + "/" + t.Key + "/" + string(t.Effect)
		if _, ok := c.taintSeen[k]; !ok {
			c.taintSeen[k] = now
			if t.TimeAdded != nil && t.TimeAdded.Add(time.Second).Before(now) {
				c.taintSeen[k] = t.TimeAdded.Time
			}
		}
		seen[t.Key] = c.taintSeen[k]
	}
	return seen
}

// forgetTaintsLocked drops first-seen times of a node's taints that are
// gone (all of them if taints is nil).
func (c *Controller) forgetTaintsLocked(node string, taints []corev1.Taint) {
	for k := range c.taintSeen {
		n, rest, _ := strings.Cut(k, "/") // node names have no slash; taint keys may
		if n != node {
			continue
		}
		keep := slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key+"/"+string(t.Effect) == rest })
		if !keep {
			delete(c.taintSeen, k)
		}
	}
}

// markPodsNotReady sets the Ready condition of the pods to False, as
// upstream's MarkPodsNotReady, remembers them as marked and returns the
// patched pods.
func (c *Controller) markPodsNotReady(ctx context.Context, log *slog.Logger, pods []*corev1.Pod, now time.Time) (map[types.UID]*corev1.Pod, error) {
	var errs []error
	marked := map[types.UID]*corev1.Pod{}
	for _, pod := range pods {
		patched, err := c.patchCondition(ctx, pod, map[string]any{"type": corev1.PodReady, "status": corev1.ConditionFalse,
			"lastTransitionTime": metav1.NewTime(now)})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.replacedPod(pod)
		c.mu.Lock()
		if c.marked[pod.Spec.NodeName] == nil {
			c.marked[pod.Spec.NodeName] = map[types.UID]bool{}
		}
		c.marked[pod.Spec.NodeName][pod.UID] = true
		c.mu.Unlock()
		marked[pod.UID] = patched
		log.Info("marked pod not ready: its node is not", "namespace", pod.Namespace, "pod", pod.Name, "node", pod.Spec.NodeName)
	}
	return marked, errors.Join(errs...)
}

// evict deletes a pod from a node with a NoExecute taint it does not
// tolerate, after recording why in its DisruptionTarget condition, as
// upstream's taint manager. marked is the pod as just patched not ready in
// the same pass, if it was.
func (c *Controller) evict(ctx context.Context, pod, marked *corev1.Pod, now time.Time) error {
	patched, err := c.patchCondition(ctx, pod, map[string]any{"type": corev1.DisruptionTarget, "status": corev1.ConditionTrue,
		"reason": "DeletionByTaintManager", "message": "Taint manager: deleting due to NoExecute taint",
		"lastTransitionTime": metav1.NewTime(now)})
	if err != nil {
		return err
	}
	uid := pod.UID
	err = c.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.replacedPod(pod, marked, patched) // all superseded by the deletion
	return nil
}

// nodeStale reports whether the cached node is one this controller's own
// writes replaced; a newer one forgets them.
func (c *Controller) nodeStale(node *corev1.Node) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.staleNodes[node.Name][node.ResourceVersion] {
		return true
	}
	delete(c.staleNodes, node.Name)
	return false
}

func (c *Controller) replacedNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.staleNodes[node.Name] == nil {
		c.staleNodes[node.Name] = map[string]bool{}
	}
	c.staleNodes[node.Name][node.ResourceVersion] = true
}

// replacedPod records versions of a pod that the controller's own writes
// superseded (nil ones are skipped).
func (c *Controller) replacedPod(versions ...*corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range versions {
		if p == nil {
			continue
		}
		byUID := c.stalePods[p.Spec.NodeName]
		if byUID == nil {
			byUID = map[types.UID]map[string]bool{}
			c.stalePods[p.Spec.NodeName] = byUID
		}
		if byUID[p.UID] == nil {
			byUID[p.UID] = map[string]bool{}
		}
		byUID[p.UID][p.ResourceVersion] = true
	}
}

// patchCondition merges one condition into a pod's status and returns the
// patched pod (nil if it is gone).
func (c *Controller) patchCondition(ctx context.Context, pod *corev1.Pod, cond map[string]any) (*corev1.Pod, error) {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   map[string]any{"conditions": []any{cond}},
	})
	if err != nil {
		return nil, err
	}
	patched, err := c.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("updating status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return patched, nil
}

func taintList(ts []corev1.Taint) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}
