package daemonset

import (
	"context"
	"log/slog"
	"reflect"
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
	exp       *controller.Expectations
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
	c.exp = controller.NewExpectations(c.now)
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger,
		Primary: &appsv1.DaemonSet{}, Resync: resyncPeriod, Shared: c.Informers})
	c.log = b.Logger()
	dsInf := b.Informers().Apps().V1().DaemonSets()
	podInf := b.SharedInformers().Core().V1().Pods()
	nodeInf := b.SharedInformers().Core().V1().Nodes()
	revInf := b.Informers().Apps().V1().ControllerRevisions()
	c.dsLister, c.podLister, c.nodes, c.revisions = dsInf.Lister(), podInf.Lister(), nodeInf.Lister(), revInf.Lister()
	b.For(dsInf.Informer(), controllerKind).OnDelete(c.exp.Forget).
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
		return controller.RetryConflicts(c.log, c.syncDaemonSet)
	})
}

// observed settles the expectations of the DaemonSet (key) that controls a
// pod, as upstream's pod handlers: a pod added counts as a creation seen; a
// pod deleted, or seen being deleted (its graceful deletion started, so its
// replacement may be made now), counts as its deletion seen.
func (c *Controller) observed(key string, event controller.Event, _, cur metav1.Object) {
	pod := cur.(*corev1.Pod)
	switch {
	case event == controller.Deleted || pod.DeletionTimestamp != nil:
		c.exp.DeletionObserved(key, controller.ObjectKey(pod))
	case event == controller.Added:
		c.exp.CreationObserved(key)
	}
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
