package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Concurrency of the API calls a Sim makes.
const (
	registerWorkers  = 32
	heartbeatWorkers = 8
	podWorkers       = 16
)

// podsByNode indexes the pod informer by spec.nodeName.
const podsByNode = "nodeName"

// Sim runs a fleet of simulated nodes; see the package documentation.
type Sim struct {
	opts    Options
	log     *slog.Logger
	cs      kubernetes.Interface
	nodes   []*simNode
	byName  map[string]*simNode
	started atomic.Bool

	// Set up by Run.
	podQueue   workqueue.TypedRateLimitingInterface[types.NamespacedName]
	nodeQueue  workqueue.TypedRateLimitingInterface[string]
	pods       corelisters.PodLister
	podIndex   cache.Indexer
	nodeLister corelisters.NodeLister
}

// simNode is one simulated node's state in the driver.
type simNode struct {
	index  int
	name   string
	hostIP string

	// registered is set once the Node object exists and ipam is ready;
	// stopped mirrors the stopped annotation; deleted is set when the Node
	// object is deleted, after which the node is no longer driven.
	registered, stopped, deleted atomic.Bool
	// forceStatus asks the next heartbeat for a status update.
	forceStatus atomic.Bool

	mu    sync.Mutex
	uid   types.UID
	ipam  *ipam
	lease *coordinationv1.Lease

	// lastStatus is touched only by the node's heartbeat (the queue never
	// hands one key to two workers) and, before that, by its registration.
	lastStatus time.Time
}

func (n *simNode) active() bool {
	return n.registered.Load() && !n.stopped.Load() && !n.deleted.Load()
}

// New prepares a Sim of opts.Nodes nodes talking to the API server of cfg.
// Nothing happens until Run.
func New(cfg *rest.Config, opts Options) (*Sim, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	// A fleet of kubelets, each with its own client-side limit upstream:
	// allow for N of them.
	if cfg.RateLimiter == nil && cfg.QPS >= 0 {
		qps := float32(100 + opts.Nodes)
		cfg.QPS = max(cfg.QPS, qps)
		cfg.Burst = max(cfg.Burst, int(2*qps))
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "plainkube-sim"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	s := &Sim{opts: opts, log: opts.Logger.With("component", "sim-nodes"), cs: cs, byName: make(map[string]*simNode, opts.Nodes)}
	for i := range opts.Nodes {
		n := &simNode{index: i, name: opts.nodeName(i), hostIP: nodeIP(i).String()}
		s.nodes = append(s.nodes, n)
		s.byName[n.name] = n
	}
	return s, nil
}

// NodeNames are the names of the simulated nodes, in order.
func (s *Sim) NodeNames() []string {
	names := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		names[i] = n.name
	}
	return names
}

// Run registers the nodes (creating them, or updating those that exist)
// and drives them and their pods until ctx ends. It returns an error if no
// node could be registered; nodes that fail to register are retried by
// their heartbeat. Run may be called once.
func (s *Sim) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("sim: Run called twice")
	}
	clk := s.opts.Clock
	s.podQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](50*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "sim-pods", Clock: clk})
	s.nodeQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, s.opts.HeartbeatInterval),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "sim-nodes", Clock: clk})

	// One pod informer for every pod bound to a node, kept to ours in
	// memory, and one node informer for the simulated nodes.
	podFactory := informers.NewSharedInformerFactoryWithOptions(s.cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName!="
	}))
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(s.cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = labels.Set{LabelSimulated: "true"}.String()
	}))
	defer podFactory.Shutdown()
	defer nodeFactory.Shutdown()
	podInformer := podFactory.Core().V1().Pods()
	if err := podInformer.Informer().AddIndexers(cache.Indexers{podsByNode: func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}); err != nil {
		return err
	}
	s.pods, s.podIndex = podInformer.Lister(), podInformer.Informer().GetIndexer()
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.podChanged,
		UpdateFunc: func(_, obj any) { s.podChanged(obj) },
		DeleteFunc: s.podDeleted,
	}); err != nil {
		return err
	}
	nodeInformer := nodeFactory.Core().V1().Nodes()
	s.nodeLister = nodeInformer.Lister()
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.nodeChanged,
		UpdateFunc: func(_, obj any) { s.nodeChanged(obj) },
		DeleteFunc: s.nodeDeleted,
	}); err != nil {
		return err
	}
	podFactory.Start(ctx.Done())
	nodeFactory.Start(ctx.Done())
	for typ, ok := range podFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sim: %v informer did not sync: %w", typ, context.Cause(ctx))
		}
	}
	for typ, ok := range nodeFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sim: %v informer did not sync: %w", typ, context.Cause(ctx))
		}
	}

	if err := s.registerAll(ctx); err != nil {
		return err
	}

	// Heartbeats spread evenly over one interval.
	for i, n := range s.nodes {
		s.nodeQueue.AddAfter(n.name, s.opts.HeartbeatInterval*time.Duration(i+1)/time.Duration(len(s.nodes)))
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		reconcile.ProcessQueue(ctx, s.nodeQueue, heartbeatWorkers, s.log.With("queue", "nodes"), s.heartbeat)
	})
	wg.Go(func() {
		reconcile.ProcessQueue(ctx, s.podQueue, podWorkers, s.log.With("queue", "pods"), s.syncPod)
	})
	wg.Wait()
	return nil
}

// registerAll registers every node, registerWorkers at a time.
func (s *Sim) registerAll(ctx context.Context) error {
	began := s.opts.Clock.Now()
	work := make(chan *simNode)
	var (
		wg       sync.WaitGroup
		failed   atomic.Int64
		firstErr error
		errOnce  sync.Once
	)
	for range min(registerWorkers, len(s.nodes)) {
		wg.Go(func() {
			for n := range work {
				if err := s.register(ctx, n); err != nil {
					failed.Add(1)
					errOnce.Do(func() { firstErr = err })
					if ctx.Err() == nil {
						s.log.Warn("registering simulated node failed; will retry", "node", n.name, "err", err)
					}
				}
			}
		})
	}
	for _, n := range s.nodes {
		work <- n
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	if int(failed.Load()) == len(s.nodes) {
		return fmt.Errorf("sim: registering nodes: %w", firstErr)
	}
	s.log.Info("registered simulated nodes", "nodes", len(s.nodes)-int(failed.Load()), "failed", failed.Load(),
		"took", s.opts.Clock.Since(began).Round(time.Millisecond))
	return nil
}

// podChanged queues a pod bound to one of our nodes.
func (s *Sim) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || s.byName[pod.Spec.NodeName] == nil {
		return
	}
	s.podQueue.Add(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
}

// podDeleted frees a deleted pod's address.
func (s *Sim) podDeleted(obj any) {
	pod, ok := reconcile.DeletedObject[*corev1.Pod](obj)
	if !ok {
		return
	}
	if n := s.byName[pod.Spec.NodeName]; n != nil {
		if a := n.getIPAM(); a != nil {
			a.release(pod.UID)
		}
	}
}

// nodeChanged follows the stopped annotation.
func (s *Sim) nodeChanged(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	n := s.byName[node.Name]
	if n == nil || n.deleted.Load() {
		return
	}
	stopped := node.Annotations[AnnotationStopped] == "true"
	was := n.stopped.Swap(stopped)
	switch {
	case stopped && !was:
		s.log.Info("simulated node stopped", "node", n.name)
	case !stopped && was:
		s.log.Info("simulated node resumed", "node", n.name)
		n.forceStatus.Store(true)
		s.nodeQueue.Add(n.name)
		s.queueNodePods(n.name)
	}
}

// nodeDeleted stops driving a node whose object was deleted.
func (s *Sim) nodeDeleted(obj any) {
	node, ok := reconcile.DeletedObject[*corev1.Node](obj)
	if !ok {
		return
	}
	if n := s.byName[node.Name]; n != nil && n.registered.Load() && node.UID == n.getUID() {
		n.deleted.Store(true)
		s.log.Info("simulated node deleted; no longer driving it", "node", n.name)
	}
}

func (s *Sim) queueNodePods(node string) {
	objs, _ := s.podIndex.ByIndex(podsByNode, node)
	for _, o := range objs {
		s.podChanged(o)
	}
}

func (n *simNode) getIPAM() *ipam {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ipam
}

func (n *simNode) getUID() types.UID {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.uid
}

// setNode records the registered Node: its UID, and the pod CIDR its
// addresses come from (ours, unless the object already had another IPv4
// one), seeded with the addresses its pods already hold.
func (s *Sim) setNode(n *simNode, node *corev1.Node) {
	prefix, err := netip.ParsePrefix(node.Spec.PodCIDR)
	if err != nil || !prefix.Addr().Is4() {
		prefix = podCIDR(n.index)
	}
	a := newIPAM(prefix)
	objs, _ := s.podIndex.ByIndex(podsByNode, n.name)
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		if pod.Status.PodIP != "" && !pod.Spec.HostNetwork && !terminal(pod.Status.Phase) {
			a.claim(pod.UID, pod.Status.PodIP)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.uid = node.UID
	if n.ipam == nil || n.ipam.prefix != a.prefix {
		n.ipam = a
	}
}
