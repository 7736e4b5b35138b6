package deployment

import (
	"context"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "deployment"

// Component is the source of the events the controller records.
const Component = "deployment-controller"

// resyncPeriod is how often every deployment is looked at again.
const resyncPeriod = 5 * time.Minute

var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Controller is the deployment controller.
type Controller struct {
	controller.Base
	now func() time.Time
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

// run is one Run of the controller: its listers, recorder and clock.
type run struct {
	client    kubernetes.Interface
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	rec       record.EventRecorder
	log       *slog.Logger
	now       func() time.Time
}

// Run watches deployments, the ReplicaSets they own and pods, and
// reconciles deployments with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	now := c.now
	if now == nil {
		now = time.Now
	}
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger,
		Primary: &appsv1.Deployment{}, Resync: resyncPeriod, Shared: c.Informers})
	dInf := b.Informers().Apps().V1().Deployments()
	rsInf := b.Informers().Apps().V1().ReplicaSets()
	podInf := b.SharedInformers().Core().V1().Pods()
	r := &run{client: c.Client, dLister: dInf.Lister(), rsLister: rsInf.Lister(), podLister: podInf.Lister(),
		log: b.Logger(), now: now}
	b.For(dInf.Informer(), controllerKind).
		Owns(rsInf.Informer(), controller.OwnOptions{OrphanSelector: func(d metav1.Object) labels.Selector {
			return controller.LabelSelector(d.(*appsv1.Deployment).Spec.Selector)
		}}).
		Watches(podInf.Informer(), controller.Deleted, func(_, obj any) []string { return r.recreateWaitingFor(b, obj) })
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		r.rec = rec
		return controller.Shape[State, Plan]{Observe: r.observe, Plan: plan, Apply: r.apply, Log: r.log}.Reconcile
	})
}

// recreateWaitingFor is the Recreate deployment a deleted pod's ReplicaSet
// belongs to: it may be waiting for its old pods to go.
func (r *run) recreateWaitingFor(b *controller.Builder, obj any) []string {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return nil
	}
	rs, err := r.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	owner, ok := b.Owner(rs.Namespace, metav1.GetControllerOfNoCopy(rs))
	if !ok || owner.(*appsv1.Deployment).Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return nil
	}
	return []string{rs.Namespace + "/" + owner.GetName()}
}
