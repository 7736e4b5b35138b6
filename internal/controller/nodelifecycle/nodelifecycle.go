package nodelifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"plainkube.dev/plainkube/internal/api/podutil"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "nodelifecycle"

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

const podNodeIndex = "spec.nodeName"

// Controller is the node lifecycle controller.
type Controller struct {
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
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Informers, when set, supplies the Pod and Node informers, shared
	// with the process's other components (see reconcile.SharedInformers).
	Informers *reconcile.SharedInformers

	client kubernetes.Interface
	now    func() time.Time

	mu           sync.Mutex
	health       map[string]*health
	buckets      map[string]*bucket
	allDisrupted bool
	// zones is the last zone computation, reused for zoneRefresh while no
	// node's readiness is seen to change (knownReady): computing it visits
	// every node, and every heartbeat reconciles a node.
	zones      map[string]zoneStats
	zonesAt    time.Time
	knownReady map[string]corev1.ConditionStatus
	// taintSeen is when a NoExecute taint was first seen (node/key/effect).
	taintSeen map[string]time.Time
	// staleNodes and stalePods hold the resourceVersions this controller's
	// own writes replaced: a cache still showing one is behind, and acting
	// on it would repeat the write.
	staleNodes map[string]map[string]bool
	stalePods  map[string]map[types.UID]map[string]bool
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{
		GracePeriod:            DefaultGracePeriod,
		StartupGracePeriod:     DefaultStartupGracePeriod,
		EvictionQPS:            DefaultEvictionQPS,
		SecondaryEvictionQPS:   DefaultSecondaryEvictionQPS,
		LargeClusterThreshold:  DefaultLargeClusterThreshold,
		UnhealthyZoneThreshold: DefaultUnhealthyZoneThreshold,
		client:                 cs,
		now:                    time.Now,
		health:                 map[string]*health{},
		buckets:                map[string]*bucket{},
		taintSeen:              map[string]time.Time{},
		staleNodes:             map[string]map[string]bool{},
		stalePods:              map[string]map[types.UID]map[string]bool{},
	}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

type listers struct {
	nodes  corelisters.NodeLister
	leases coordinationlisters.LeaseLister
	pods   cache.Indexer
}

// Run watches Nodes, their Leases and Pods and keeps node conditions,
// taints and pods in line with node health, with workers workers, until
// ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	log := c.Logger
	if log == nil {
		log = slog.Default().With("controller", Name)
	}
	queue := reconcile.NewQueue[string](Name)
	factory := informers.NewSharedInformerFactory(c.client, 0)
	leaseFactory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(corev1.NamespaceNodeLease))
	sharedFactory := reconcile.SharedOr(c.Informers, factory)
	nodeInformer := sharedFactory.Core().V1().Nodes()
	podInformer := sharedFactory.Core().V1().Pods()
	leaseInformer := leaseFactory.Coordination().V1().Leases()
	if err := reconcile.AddIndexer(podInformer.Informer(), podNodeIndex, func(obj any) ([]string, error) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			return []string{pod.Spec.NodeName}, nil
		}
		return nil, nil
	}); err != nil {
		return err
	}
	l := listers{nodes: nodeInformer.Lister(), leases: leaseInformer.Lister(), pods: podInformer.Informer().GetIndexer()}

	enqueueName := func(obj any) {
		if m, ok := reconcile.DeletedObject[metav1.Object](obj); ok {
			queue.Add(m.GetName())
		}
	}
	removeNodeHandler, err := reconcile.AddHandler(nodeInformer.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueName,
		UpdateFunc: func(_, obj any) { enqueueName(obj) },
		DeleteFunc: enqueueName,
	})
	if err != nil {
		return err
	}
	defer removeNodeHandler()
	if _, err := leaseInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueName,
		UpdateFunc: func(_, obj any) { enqueueName(obj) },
	}); err != nil {
		return err
	}
	// A pod that lands on a node, or whose tolerations or readiness change,
	// gets its node looked at (eviction, readiness on a dead node).
	removePodHandler, err := reconcile.AddHandler(podInformer.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
				queue.Add(pod.Spec.NodeName)
			}
		},
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*corev1.Pod)
			p, ok2 := obj.(*corev1.Pod)
			if !ok1 || !ok2 || p.Spec.NodeName == "" {
				return
			}
			if o.Spec.NodeName != p.Spec.NodeName || !apiequality.Semantic.DeepEqual(o.Spec.Tolerations, p.Spec.Tolerations) ||
				podReady(o) != podReady(p) {
				queue.Add(p.Spec.NodeName)
			}
		},
	})
	if err != nil {
		return err
	}
	defer removePodHandler()

	factory.Start(ctx.Done())
	sharedFactory.Start(ctx.Done())
	leaseFactory.Start(ctx.Done())
	defer factory.Shutdown()
	defer leaseFactory.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, "nodelifecycle informers", nodeInformer.Informer().HasSynced, podInformer.Informer().HasSynced, leaseInformer.Informer().HasSynced); !ok {
		queue.ShutDown()
		return err
	}
	log.Info("nodelifecycle controller synced")
	enqueueAll := func() {
		nodes, _ := l.nodes.List(labels.Everything())
		for _, n := range nodes {
			queue.Add(n.Name)
		}
	}
	reconcile.ProcessQueue(ctx, queue, workers, log, func(ctx context.Context, name string) (reconcile.Result, error) {
		return c.reconcile(ctx, log, l, name, enqueueAll)
	})
	return nil
}

// podReady is the status of the pod's Ready condition ("" without one).
func podReady(pod *corev1.Pod) corev1.ConditionStatus {
	if c := podutil.ReadyCondition(pod); c != nil {
		return c.Status
	}
	return ""
}

// reconcile looks at one node: its health (marking it Unknown when it went
// silent), the zone's state, its taints, and the pods on it.
func (c *Controller) reconcile(ctx context.Context, log *slog.Logger, l listers, name string, enqueueAll func()) (reconcile.Result, error) {
	now := c.now()
	node, err := l.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.health, name)
		delete(c.staleNodes, name)
		delete(c.stalePods, name)
		c.forgetTaintsLocked(name, nil)
		c.mu.Unlock()
		c.updateDisruption(l, nil, now, enqueueAll)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if c.nodeStale(node) {
		return reconcile.Result{Requeue: true}, nil
	}
	lease, err := l.leases.Leases(corev1.NamespaceNodeLease).Get(name)
	if err != nil {
		lease = nil
	}
	var after []time.Duration

	// 1. Health.
	c.mu.Lock()
	h := observe(c.health[name], node, lease, now)
	c.health[name] = h
	probe := h.probe
	c.mu.Unlock()
	grace := c.GracePeriod
	if readyCondition(node) == nil {
		grace = c.StartupGracePeriod
	}
	if deadline := probe.Add(grace); now.After(deadline) {
		silent := node.DeepCopy()
		if markUnknown(silent, now) {
			written, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, silent, metav1.UpdateOptions{})
			if err != nil {
				return reconcile.Result{}, fmt.Errorf("marking node %s unknown: %w", name, err)
			}
			c.replacedNode(node)
			log.Info("node stopped posting status; conditions set to Unknown", "node", name, "silentFor", now.Sub(probe).Round(time.Millisecond))
			node = written
			c.mu.Lock()
			if r := readyCondition(written); r != nil {
				cp := *r
				h.ready = &cp
			}
			h.readyTransition = now
			c.mu.Unlock()
		}
	} else {
		after = append(after, deadline.Sub(now)+time.Millisecond)
	}

	// 2. Zones: is every zone fully disrupted?
	zones, all := c.updateDisruption(l, node, now, enqueueAll)

	// 3. Taints.
	ch := decideTaints(node, all)
	var tookFrom *bucket // a token to give back if the write fails
	if ch.noExecute != nil {
		zk := zoneKey(node)
		z, ok := zones[zk]
		if !ok {
			z = zoneStats{state: StateNormal}
		}
		qps := taintQPS(z, rates{qps: c.EvictionQPS, secondaryQPS: c.SecondaryEvictionQPS, largeClusterThreshold: c.LargeClusterThreshold})
		c.mu.Lock()
		b := c.buckets[zk]
		if b == nil {
			b = newBucket(now)
			c.buckets[zk] = b
		}
		took, wait := b.take(now, qps)
		c.mu.Unlock()
		switch {
		case took:
			ch.add = append(ch.add, *ch.noExecute)
			tookFrom = b
		case wait > 0:
			after = append(after, wait)
		default:
			after = append(after, retryPeriod)
		}
	}
	if len(ch.add)+len(ch.remove) > 0 {
		tainted := node.DeepCopy()
		tainted.Spec.Taints = applyTaints(node.Spec.Taints, ch.add, ch.remove, now)
		written, err := c.client.CoreV1().Nodes().Update(ctx, tainted, metav1.UpdateOptions{})
		if err != nil {
			if tookFrom != nil {
				c.mu.Lock()
				tookFrom.refund()
				c.mu.Unlock()
			}
			return reconcile.Result{}, fmt.Errorf("updating taints of node %s: %w", name, err)
		}
		c.replacedNode(node)
		log.Info("node taints changed", "node", name, "added", taintList(ch.add), "removed", taintList(ch.remove))
		node = written
	}

	// 4. Pods: not ready on a node that is not, evicted if they do not
	// tolerate its NoExecute taints.
	objs, err := l.pods.ByIndex(podNodeIndex, name)
	if err != nil {
		return reconcile.Result{}, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	c.mu.Lock()
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
	c.mu.Unlock()
	cur := readyStatus(node)
	var marked map[types.UID]*corev1.Pod // pods patched not ready, by UID
	c.mu.Lock()
	last := h.lastReady
	c.mu.Unlock()
	// A silent node's pods are not ready whatever they last said; a node
	// that reports NotReady gets its pods marked once, on the transition
	// (its kubelet manages them afterwards).
	if cur == corev1.ConditionUnknown || (cur == corev1.ConditionFalse && last == corev1.ConditionTrue) {
		var err error
		if marked, err = c.markPodsNotReady(ctx, log, pods, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	c.mu.Lock()
	h.lastReady = cur
	c.mu.Unlock()

	start := c.taintStarts(name, node.Spec.Taints, now)
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		at, evict := evictionTime(pod, node.Spec.Taints, start)
		if !evict {
			continue
		}
		if now.Before(at) {
			after = append(after, at.Sub(now)+time.Millisecond)
			continue
		}
		if err := c.evict(ctx, pod, marked[pod.UID], now); err != nil {
			return reconcile.Result{}, err
		}
		log.Info("evicted pod from node with NoExecute taint", "namespace", pod.Namespace, "pod", pod.Name, "node", name)
	}

	if len(after) == 0 {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: slices.Min(after)}, nil
}

// zoneRefresh is how long a zone computation is reused (upstream recomputes
// every node-monitor-period, 5 s).
const zoneRefresh = time.Second

// updateDisruption computes zone states from the cached nodes (with node,
// if given, as just written), records whether every zone is fully
// disrupted and acts on a change: all nodes are looked at again, and when
// leaving full disruption every node gets a fresh grace period (as
// upstream: the silence was most likely the control plane's).
func (c *Controller) updateDisruption(l listers, node *corev1.Node, now time.Time, enqueueAll func()) (map[string]zoneStats, bool) {
	c.mu.Lock()
	if c.zones != nil && now.Sub(c.zonesAt) < zoneRefresh && now.Sub(c.zonesAt) >= 0 &&
		(node == nil || c.knownReady[node.Name] == readyStatus(node)) {
		zones, all := c.zones, c.allDisrupted
		c.mu.Unlock()
		return zones, all
	}
	c.mu.Unlock()
	nodes, _ := l.nodes.List(labels.Everything())
	if node != nil {
		for i, n := range nodes {
			if n.Name == node.Name {
				nodes[i] = node
			}
		}
	}
	zones, all := zoneStates(nodes, c.UnhealthyZoneThreshold)
	known := make(map[string]corev1.ConditionStatus, len(nodes))
	for _, n := range nodes {
		known[n.Name] = readyStatus(n)
	}
	c.mu.Lock()
	c.zones, c.zonesAt, c.knownReady = zones, now, known
	was := c.allDisrupted
	c.allDisrupted = all
	if was && !all {
		for _, h := range c.health {
			h.probe, h.readyTransition = now, now
		}
	}
	c.mu.Unlock()
	if was != all {
		if all {
			c.logger().Info("every zone is fully disrupted: no NoExecute taints until some node is ready")
		} else {
			c.logger().Info("some node is ready again: leaving full disruption")
		}
		enqueueAll()
	}
	return zones, all
}

func (c *Controller) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default().With("controller", Name)
}

// taintStarts returns when each NoExecute taint of a node began to apply,
// as upstream's taint manager counts tolerationSeconds: from when the
// controller first saw the taint; or, for a taint clearly older than that
// (the controller restarted), from its timeAdded (which the API keeps to
// the second only, hence not used for fresh taints).
func (c *Controller) taintStarts(node string, taints []corev1.Taint, now time.Time) func(corev1.Taint) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
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
	return func(t corev1.Taint) time.Time { return seen[t.Key] }
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

// markPodsNotReady sets the Ready condition of the pods that have one to
// False, as upstream's MarkPodsNotReady, and returns the patched pods.
func (c *Controller) markPodsNotReady(ctx context.Context, log *slog.Logger, pods []*corev1.Pod, now time.Time) (map[types.UID]*corev1.Pod, error) {
	var errs []error
	marked := map[types.UID]*corev1.Pod{}
	for _, pod := range pods {
		if s := podReady(pod); s == "" || s == corev1.ConditionFalse {
			continue
		}
		patched, err := c.patchCondition(ctx, pod, map[string]any{"type": corev1.PodReady, "status": corev1.ConditionFalse,
			"lastTransitionTime": metav1.NewTime(now)})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.replacedPod(pod)
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
	err = c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
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
	patched, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
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
