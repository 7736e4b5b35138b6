package statefulset

import (
	"context"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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
const Name = "statefulset"

// Component is the source of the controller's events, as upstream's.
const Component = "statefulset-controller"

const resyncPeriod = 5 * time.Minute

// Controller runs the StatefulSet loop.
type Controller struct {
	controller.Base
	now func() time.Time

	sets      appslisters.StatefulSetLister
	pods      corelisters.PodLister
	claims    corelisters.PersistentVolumeClaimLister
	revisions appslisters.ControllerRevisionLister
	rec       record.EventRecorder
	log       *slog.Logger
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

// Run watches StatefulSets, pods, claims and ControllerRevisions and
// reconciles StatefulSets with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger,
		Primary: &appsv1.StatefulSet{}, Resync: resyncPeriod, Shared: c.Informers})
	c.log = b.Logger()
	setInf := b.Informers().Apps().V1().StatefulSets()
	podInf := b.SharedInformers().Core().V1().Pods()
	pvcInf := b.Informers().Core().V1().PersistentVolumeClaims()
	revInf := b.Informers().Apps().V1().ControllerRevisions()
	c.sets, c.pods, c.claims, c.revisions = setInf.Lister(), podInf.Lister(), pvcInf.Lister(), revInf.Lister()
	b.For(setInf.Informer(), controllerKind).
		Owns(podInf.Informer(), controller.OwnOptions{OrphanSelector: func(s metav1.Object) labels.Selector {
			return controller.LabelSelector(s.(*appsv1.StatefulSet).Spec.Selector)
		}}).
		WaitsFor(pvcInf.Informer(), revInf.Informer())
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		c.rec = rec
		return c.sync
	})
}
