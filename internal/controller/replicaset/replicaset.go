package replicaset

import (
	"context"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "replicaset"

// Event sources, as upstream's.
const (
	ReplicaSetComponent            = "replicaset-controller"
	ReplicationControllerComponent = "replication-controller"
)

// DefaultBurstReplicas is the most pods one reconcile creates or deletes.
const DefaultBurstReplicas = 500

// resyncPeriod is how often every workload is looked at again.
const resyncPeriod = 5 * time.Minute

// Controller runs the ReplicaSet and the ReplicationController loops.
type Controller struct {
	controller.Base
	// BurstReplicas bounds the creates or deletes of one reconcile; set
	// before Run.
	BurstReplicas int
	// ReplicaSets and ReplicationControllers say which kinds to serve
	// (both by default).
	ReplicaSets, ReplicationControllers bool
	// ReplicationControllerClient, when set, is the ReplicationController
	// loop's client (upstream runs it as a controller of its own, under
	// its own identity); nil: the controller's.
	ReplicationControllerClient kubernetes.Interface

	now func() time.Time
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{BurstReplicas: DefaultBurstReplicas, ReplicaSets: true, ReplicationControllers: true,
		Base: base, now: time.Now}, nil
}

// Run watches ReplicaSets, ReplicationControllers and pods, and reconciles
// each kind with workers workers, until ctx ends. Each kind is its own
// loop, with its own queue, expectations and event source.
func (c *Controller) Run(ctx context.Context, workers int) error {
	burst := c.BurstReplicas
	if burst <= 0 {
		burst = DefaultBurstReplicas
	}
	type loopOf struct {
		kind   kind
		client kubernetes.Interface
	}
	var kinds []loopOf
	if c.ReplicaSets {
		kinds = append(kinds, loopOf{&replicaSetKind{client: c.Client}, c.Client})
	}
	if c.ReplicationControllers {
		client := c.Client
		if c.ReplicationControllerClient != nil {
			client = c.ReplicationControllerClient
		}
		kinds = append(kinds, loopOf{&replicationControllerKind{client: client}, client})
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, len(kinds))
	for _, k := range kinds {
		go func() {
			err := c.runKind(ctx, k.kind, k.client, workers, burst)
			stop() // one loop stopping stops the other: Run returns, to be restarted whole
			errs <- err
		}()
	}
	var first error
	for range kinds {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// runKind runs the loop of one kind.
func (c *Controller) runKind(ctx context.Context, k kind, client kubernetes.Interface, workers, burst int) error {
	gvk := k.gvk()
	b := controller.NewBuilder(controller.Config{Name: strings.ToLower(gvk.Kind), Component: k.component(), Client: client,
		Logger: c.Logger, Primary: k.newObject(), Resync: resyncPeriod, Shared: c.Informers})
	podInf := b.SharedInformers().Core().V1().Pods()
	l := &loop{kind: k, gvk: gvk, client: client, pods: podInf.Lister(), queue: b.Queue(),
		exp: controller.NewExpectations(c.now), log: b.Logger().With("kind", gvk.Kind), burst: burst, now: c.now}
	b.For(k.informer(b.Informers()), gvk).OnDelete(l.exp.Forget).
		Owns(podInf.Informer(), controller.OwnOptions{
			OrphanSelector: func(o metav1.Object) labels.Selector {
				if w, ok := k.fromObject(o); ok && w.selector != nil {
					return w.selector
				}
				return nil
			},
			Observed: l.observed,
		})
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		l.rec = rec
		return controller.Shape[State, Plan]{Observe: l.observe, Plan: plan, Apply: l.apply, Log: l.log}.Reconcile
	})
}
