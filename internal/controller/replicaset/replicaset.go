package replicaset

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/controller/events"
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
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// BurstReplicas bounds the creates or deletes of one reconcile; set
	// before Run.
	BurstReplicas int
	// ReplicaSets and ReplicationControllers say which kinds to serve
	// (both by default).
	ReplicaSets, ReplicationControllers bool
	// Informers, when set, supplies the Pod informer, shared with the
	// process's other components (see reconcile.SharedInformers).
	Informers *reconcile.SharedInformers

	client kubernetes.Interface
	now    func() time.Time
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{BurstReplicas: DefaultBurstReplicas, ReplicaSets: true, ReplicationControllers: true,
		client: cs, now: time.Now}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

// Run watches ReplicaSets, ReplicationControllers and pods, and reconciles
// each kind with workers workers, until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	log := c.Logger
	if log == nil {
		log = slog.Default().With("controller", Name)
	}
	burst := c.BurstReplicas
	if burst <= 0 {
		burst = DefaultBurstReplicas
	}
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{
		&appsv1.ReplicaSet{}: resyncPeriod, &corev1.ReplicationController{}: resyncPeriod}))
	sharedFactory := reconcile.SharedOr(c.Informers, factory)
	podInformer := sharedFactory.Core().V1().Pods()
	synced := []cache.InformerSynced{podInformer.Informer().HasSynced}
	var kinds []kind
	if c.ReplicaSets {
		kinds = append(kinds, &replicaSetKind{client: c.client})
	}
	if c.ReplicationControllers {
		kinds = append(kinds, &replicationControllerKind{client: c.client})
	}
	var loops []*loop
	for _, k := range kinds {
		rec, stop := events.NewRecorder(ctx, c.client, k.component(), log)
		defer stop()
		l := &loop{kind: k, gvk: k.gvk(), client: c.client, pods: podInformer.Lister(),
			queue: reconcile.NewQueue[string](k.gvk().Kind), exp: controller.NewExpectations(c.now), rec: rec,
			log: log.With("kind", k.gvk().Kind), burst: burst, now: c.now}
		inf := k.informer(factory)
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: l.addWorkload, UpdateFunc: l.updateWorkload, DeleteFunc: l.deleteWorkload,
		}); err != nil {
			return err
		}
		remove, err := reconcile.AddHandler(podInformer.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: l.addPod, UpdateFunc: l.updatePod, DeleteFunc: l.deletePod,
		})
		if err != nil {
			return err
		}
		defer remove()
		synced = append(synced, inf.HasSynced)
		loops = append(loops, l)
	}
	factory.Start(ctx.Done())
	sharedFactory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		for _, l := range loops {
			l.queue.ShutDown()
		}
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("replicaset informers did not sync")
	}
	log.Info("replicaset controller synced")
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reconcile.ProcessQueue(ctx, l.queue, workers, l.log, l.sync)
		}()
	}
	wg.Wait()
	return nil
}
