package servicelb

import (
	"context"
	"log/slog"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "servicelb"

// passKey is the only key in the queue: a pass over all Services.
const passKey = "services"

// Controller keeps LoadBalancer Services' ingress on the nodes.
type Controller struct {
	// Informers, when set, supplies the Node informer shared with the
	// process's other components.
	Informers *reconcile.SharedInformers
	Logger    *slog.Logger
	client    kubernetes.Interface
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{client: cs}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

// Run watches Services and Nodes and sets ingress until ctx ends.
func (c *Controller) Run(ctx context.Context, _ int) error {
	log := c.Logger
	if log == nil {
		log = slog.Default().With("controller", Name)
	}
	queue := reconcile.NewQueue[string](Name)
	factory := informers.NewSharedInformerFactory(c.client, 0)
	nodeInformer := reconcile.SharedOr(c.Informers, factory).Core().V1().Nodes()
	svcInformer := factory.Core().V1().Services()
	pass := func(any) { queue.Add(passKey) }
	handler := cache.ResourceEventHandlerFuncs{AddFunc: pass, UpdateFunc: func(_, obj any) { pass(obj) }, DeleteFunc: pass}
	for _, inf := range []cache.SharedIndexInformer{nodeInformer.Informer(), svcInformer.Informer()} {
		remove, err := reconcile.AddHandler(inf, handler)
		if err != nil {
			return err
		}
		defer remove()
	}
	factory.Start(ctx.Done())
	if c.Informers != nil {
		c.Informers.Start(ctx.Done())
	}
	defer factory.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, "servicelb informers", nodeInformer.Informer().HasSynced, svcInformer.Informer().HasSynced); !ok {
		queue.ShutDown()
		return err
	}
	reconcile.ProcessQueue(ctx, queue, 1, log, func(ctx context.Context, _ string) (reconcile.Result, error) {
		services, err := svcInformer.Lister().List(labels.Everything())
		if err != nil {
			return reconcile.Result{}, err
		}
		nodes, err := nodeInformer.Lister().List(labels.Everything())
		if err != nil {
			return reconcile.Result{}, err
		}
		want := Plan(services, nodes)
		for _, s := range services {
			ingress, ok := want[s.Namespace+"/"+s.Name]
			if !ok || reflect.DeepEqual(ingress, s.Status.LoadBalancer.Ingress) ||
				len(ingress) == 0 && len(s.Status.LoadBalancer.Ingress) == 0 {
				continue
			}
			s = s.DeepCopy()
			s.Status.LoadBalancer.Ingress = ingress
			if _, err := c.client.CoreV1().Services(s.Namespace).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, err
			}
			log.Info("load balancer ingress", "namespace", s.Namespace, "service", s.Name, "ingress", len(ingress))
		}
		return reconcile.Result{}, nil
	})
	return nil
}
