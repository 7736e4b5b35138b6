package servicelb

import (
	"context"
	"log/slog"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "servicelb"

// passKey is the only key in the queue: a pass over all Services.
const passKey = "services"

// Controller keeps LoadBalancer Services' ingress on the nodes.
type Controller struct {
	controller.Base
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base}, nil
}

// Run watches Services and Nodes and sets ingress until ctx ends.
func (c *Controller) Run(ctx context.Context, _ int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Name, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	nodeInf := b.SharedInformers().Core().V1().Nodes()
	svcInf := b.Informers().Core().V1().Services()
	pass := func(_, _ any) []string { return []string{passKey} }
	b.Watches(nodeInf.Informer(), controller.AllEvents, pass).
		Watches(svcInf.Informer(), controller.AllEvents, pass)
	log := b.Logger()
	return b.Run(ctx, 1, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, _ string) (reconcile.Result, error) {
			services, err := svcInf.Lister().List(labels.Everything())
			if err != nil {
				return reconcile.Result{}, err
			}
			nodes, err := nodeInf.Lister().List(labels.Everything())
			if err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, c.apply(ctx, log, services, plan(State{Services: services, Nodes: nodes}))
		}
	})
}

// apply writes the planned ingress of each Service whose status differs.
func (c *Controller) apply(ctx context.Context, log *slog.Logger, services []*corev1.Service, want Plan) error {
	for _, s := range services {
		ingress, ok := want[s.Namespace+"/"+s.Name]
		if !ok || reflect.DeepEqual(ingress, s.Status.LoadBalancer.Ingress) ||
			len(ingress) == 0 && len(s.Status.LoadBalancer.Ingress) == 0 {
			continue
		}
		s = s.DeepCopy()
		s.Status.LoadBalancer.Ingress = ingress
		if _, err := c.Client.CoreV1().Services(s.Namespace).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		log.Info("load balancer ingress", "namespace", s.Namespace, "service", s.Name, "ingress", len(ingress))
	}
	return nil
}
