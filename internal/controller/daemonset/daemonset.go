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
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
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
	controller.Base
	now func() time.Time

	dsLister  appslisters.DaemonSetLister
	podLister corelisters.PodLister
	nodes     corelisters.NodeLister
	revisions appslisters.ControllerRevisionLister
	rec       record.EventRecorder
	log       *slog.Logger
	exp       *expectations
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base, now: time.Now}, nil
}

// Run watches DaemonSets, pods, nodes and ControllerRevisions and reconciles
// DaemonSets with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.exp = newExpectations(c.now)
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger,
		Primary: &appsv1.DaemonSet{}, Resync: resyncPeriod, Shared: c.Informers})
	c.log = b.Logger()
	dsInf := b.Informers().Apps().V1().DaemonSets()
	podInf := b.SharedInformers().Core().V1().Pods()
	nodeInf := b.SharedInformers().Core().V1().Nodes()
	revInf := b.Informers().Apps().V1().ControllerRevisions()
	c.dsLister, c.podLister, c.nodes, c.revisions = dsInf.Lister(), podInf.Lister(), nodeInf.Lister(), revInf.Lister()
	b.For(dsInf.Informer(), controllerKind).
		Owns(podInf.Informer(), controller.OwnOptions{
			OrphanSelector: func(ds metav1.Object) labels.Selector {
				return controller.LabelSelector(ds.(*appsv1.DaemonSet).Spec.Selector)
			},
			Observed: c.observed,
		}).
		Watches(nodeInf.Informer(), controller.AllEvents, c.nodeEvent).
		WaitsFor(revInf.Informer())
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		c.rec = rec
		return c.sync
	})
}

// observed counts an event on a DaemonSet's pod against its expectations:
// a deleted pod counts as being deleted.
func (c *Controller) observed(key string, event controller.Event, _, cur metav1.Object) {
	pod := cur.(*corev1.Pod)
	if event == controller.Deleted && pod.DeletionTimestamp == nil {
		pod = pod.DeepCopy()
		now := metav1.Now()
		pod.DeletionTimestamp = &now
	}
	c.exp.observe(key, pod)
}

// nodeEvent: every DaemonSet looks again when a node comes or goes, or its
// labels, taints or schedulability change.
func (c *Controller) nodeEvent(oldObj, curObj any) []string {
	if old, ok := oldObj.(*corev1.Node); ok {
		cur, ok := curObj.(*corev1.Node)
		if !ok || (reflect.DeepEqual(old.Labels, cur.Labels) && reflect.DeepEqual(old.Spec.Taints, cur.Spec.Taints) &&
			old.Spec.Unschedulable == cur.Spec.Unschedulable) {
			return nil
		}
	}
	all, err := c.dsLister.List(labels.Everything())
	if err != nil {
		return nil
	}
	keys := make([]string, len(all))
	for i, ds := range all {
		keys[i] = ds.Namespace + "/" + ds.Name
	}
	return keys
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
