package daemonset

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/controller/events"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "daemonset"

// Component is the source of the controller's events, as upstream's.
const Component = "daemonset-controller"

// BurstReplicas bounds the pods one reconcile creates or deletes.
const BurstReplicas = 250

const resyncPeriod = 5 * time.Minute

// expectationsTimeout: creations or deletions not seen by then are
// forgotten, and the DaemonSet is looked at afresh.
const expectationsTimeout = 2 * time.Minute

// Controller runs the DaemonSet loop.
type Controller struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Informers, when set, supplies the Pod and Node informers, shared
	// with the process's other components (see reconcile.SharedInformers).
	Informers *reconcile.SharedInformers

	client kubernetes.Interface
	now    func() time.Time

	dsLister  appslisters.DaemonSetLister
	podLister corelisters.PodLister
	nodes     corelisters.NodeLister
	revisions appslisters.ControllerRevisionLister
	queue     workqueue.TypedRateLimitingInterface[string]
	rec       record.EventRecorder
	log       *slog.Logger
	exp       *expectations
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{client: cs, now: time.Now}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

// Run watches DaemonSets, pods, nodes and ControllerRevisions and reconciles
// DaemonSets with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.log = c.Logger
	if c.log == nil {
		c.log = slog.Default().With("controller", Name)
	}
	c.exp = newExpectations(c.now)
	c.queue = reconcile.NewQueue[string]("daemonset")
	rec, stop := events.NewRecorder(ctx, c.client, Component, c.log)
	defer stop()
	c.rec = rec
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithCustomResyncConfig(
		map[metav1.Object]time.Duration{&appsv1.DaemonSet{}: resyncPeriod}))
	dsInf := factory.Apps().V1().DaemonSets()
	sharedFactory := reconcile.SharedOr(c.Informers, factory)
	podInf := sharedFactory.Core().V1().Pods()
	nodeInf := sharedFactory.Core().V1().Nodes()
	revInf := factory.Apps().V1().ControllerRevisions()
	c.dsLister, c.podLister, c.nodes, c.revisions = dsInf.Lister(), podInf.Lister(), nodeInf.Lister(), revInf.Lister()
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{dsInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueDS,
			UpdateFunc: func(_, cur any) { c.enqueueDS(cur) },
			DeleteFunc: c.enqueueDS,
		}},
		{podInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.podEvent,
			UpdateFunc: func(old, cur any) { c.podEvent(old); c.podEvent(cur) },
			DeleteFunc: c.podDeleted,
		}},
		{nodeInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.enqueueAll() },
			UpdateFunc: c.nodeUpdate,
			DeleteFunc: func(any) { c.enqueueAll() },
		}},
	}
	for _, h := range handlers {
		remove, err := reconcile.AddHandler(h.inf, h.h)
		if err != nil {
			return err
		}
		defer remove()
	}
	factory.Start(ctx.Done())
	sharedFactory.Start(ctx.Done())
	defer factory.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, "daemonset informers", dsInf.Informer().HasSynced, podInf.Informer().HasSynced,
		nodeInf.Informer().HasSynced, revInf.Informer().HasSynced); !ok {
		c.queue.ShutDown()
		return err
	}
	c.log.Info("daemonset controller synced")
	reconcile.ProcessQueue(ctx, c.queue, workers, c.log, c.sync)
	return nil
}

func (c *Controller) enqueueDS(obj any) {
	if ds, ok := reconcile.DeletedObject[*appsv1.DaemonSet](obj); ok {
		c.queue.Add(ds.Namespace + "/" + ds.Name)
	}
}

func (c *Controller) enqueueAll() {
	all, err := c.dsLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		c.enqueueDS(ds)
	}
}

func (c *Controller) nodeUpdate(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Node)
	cur, ok2 := curObj.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	if !reflect.DeepEqual(old.Labels, cur.Labels) || !reflect.DeepEqual(old.Spec.Taints, cur.Spec.Taints) ||
		old.Spec.Unschedulable != cur.Spec.Unschedulable {
		c.enqueueAll()
	}
}

// podEvent wakes the DaemonSet controlling the pod, or, for an orphan,
// every DaemonSet whose selector matches it.
func (c *Controller) podEvent(obj any) {
	pod, ok := reconcile.DeletedObject[*corev1.Pod](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if ref.Kind == "DaemonSet" {
			key := pod.Namespace + "/" + ref.Name
			c.exp.observe(key, pod)
			c.queue.Add(key)
		}
		return
	}
	if len(pod.Labels) == 0 {
		return
	}
	all, err := c.dsLister.DaemonSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			c.enqueueDS(ds)
		}
	}
}

func (c *Controller) podDeleted(obj any) {
	pod, ok := reconcile.DeletedObject[*corev1.Pod](obj)
	if !ok {
		return
	}
	if pod.DeletionTimestamp == nil {
		pod = pod.DeepCopy()
		now := metav1.Now()
		pod.DeletionTimestamp = &now
	}
	c.podEvent(pod)
}

// expectations are the pods a DaemonSet created or deleted that the
// informer has not shown yet; until it does, the DaemonSet's pods are not
// managed (status is still written).
type expectations struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*pendingOps
}

type pendingOps struct {
	created map[string]bool // pod names
	deleted map[string]bool // pod UIDs
	at      time.Time
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, m: map[string]*pendingOps{}}
}

func (e *expectations) record(key string, created []string, deleted []string) {
	if len(created) == 0 && len(deleted) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.m[key]
	if p == nil {
		p = &pendingOps{created: map[string]bool{}, deleted: map[string]bool{}}
		e.m[key] = p
	}
	p.at = e.now()
	for _, n := range created {
		p.created[n] = true
	}
	for _, u := range deleted {
		p.deleted[u] = true
	}
}

// satisfied checks the pending operations against pods (the namespace's
// pods from the cache) and says whether none remain.
func (e *expectations) satisfied(key string, pods []*corev1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.m[key]
	if p == nil {
		return true
	}
	if e.now().Sub(p.at) > expectationsTimeout {
		delete(e.m, key)
		return true
	}
	byName := map[string]*corev1.Pod{}
	byUID := map[string]*corev1.Pod{}
	for _, pod := range pods {
		byName[pod.Name] = pod
		byUID[string(pod.UID)] = pod
	}
	for n := range p.created {
		if byName[n] != nil {
			delete(p.created, n)
		}
	}
	for u := range p.deleted {
		if pod := byUID[u]; pod == nil || pod.DeletionTimestamp != nil {
			delete(p.deleted, u)
		}
	}
	if len(p.created) == 0 && len(p.deleted) == 0 {
		delete(e.m, key)
		return true
	}
	return false
}

// observe marks pod, seen by an informer, as created (and, if it is being
// deleted, as deleted).
func (e *expectations) observe(key string, pod *corev1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.m[key]; p != nil {
		delete(p.created, pod.Name)
		if pod.DeletionTimestamp != nil {
			delete(p.deleted, string(pod.UID))
		}
	}
}

func (e *expectations) forget(key string) {
	e.mu.Lock()
	delete(e.m, key)
	e.mu.Unlock()
}
