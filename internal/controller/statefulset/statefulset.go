package statefulset

import (
	"context"
	"log/slog"
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
const Name = "statefulset"

// Component is the source of the controller's events, as upstream's.
const Component = "statefulset-controller"

const resyncPeriod = 5 * time.Minute

// Controller runs the StatefulSet loop.
type Controller struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Informers, when set, supplies the Pod informer, shared with the
	// process's other components (see reconcile.SharedInformers).
	Informers *reconcile.SharedInformers

	client kubernetes.Interface
	now    func() time.Time

	sets      appslisters.StatefulSetLister
	pods      corelisters.PodLister
	claims    corelisters.PersistentVolumeClaimLister
	revisions appslisters.ControllerRevisionLister
	queue     workqueue.TypedRateLimitingInterface[string]
	rec       record.EventRecorder
	log       *slog.Logger
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

// Run watches StatefulSets, pods, claims and ControllerRevisions and
// reconciles StatefulSets with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.log = c.Logger
	if c.log == nil {
		c.log = slog.Default().With("controller", Name)
	}
	c.queue = reconcile.NewQueue[string]("statefulset")
	rec, stop := events.NewRecorder(ctx, c.client, Component, c.log)
	defer stop()
	c.rec = rec
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithCustomResyncConfig(
		map[metav1.Object]time.Duration{&appsv1.StatefulSet{}: resyncPeriod}))
	setInf := factory.Apps().V1().StatefulSets()
	sharedFactory := reconcile.SharedOr(c.Informers, factory)
	podInf := sharedFactory.Core().V1().Pods()
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	revInf := factory.Apps().V1().ControllerRevisions()
	c.sets, c.pods, c.claims, c.revisions = setInf.Lister(), podInf.Lister(), pvcInf.Lister(), revInf.Lister()
	if _, err := setInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueSet,
		UpdateFunc: func(_, cur any) { c.enqueueSet(cur) },
		DeleteFunc: c.enqueueSet,
	}); err != nil {
		return err
	}
	removePodHandler, err := reconcile.AddHandler(podInf.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podEvent,
		UpdateFunc: func(old, cur any) { c.podEvent(old); c.podEvent(cur) },
		DeleteFunc: c.podEvent,
	})
	if err != nil {
		return err
	}
	defer removePodHandler()
	factory.Start(ctx.Done())
	sharedFactory.Start(ctx.Done())
	defer factory.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, "statefulset informers", setInf.Informer().HasSynced, podInf.Informer().HasSynced,
		pvcInf.Informer().HasSynced, revInf.Informer().HasSynced); !ok {
		c.queue.ShutDown()
		return err
	}
	c.log.Info("statefulset controller synced")
	reconcile.ProcessQueue(ctx, c.queue, workers, c.log, c.sync)
	return nil
}

func (c *Controller) enqueueSet(obj any) {
	if s, ok := reconcile.DeletedObject[*appsv1.StatefulSet](obj); ok {
		c.queue.Add(s.Namespace + "/" + s.Name)
	}
}

// podEvent wakes the StatefulSet controlling the pod, or, for an orphan,
// every StatefulSet whose selector matches it.
func (c *Controller) podEvent(obj any) {
	pod, ok := reconcile.DeletedObject[*corev1.Pod](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if ref.Kind == "StatefulSet" {
			c.queue.Add(pod.Namespace + "/" + ref.Name)
		}
		return
	}
	if len(pod.Labels) == 0 {
		return
	}
	all, err := c.sets.StatefulSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range all {
		sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			c.enqueueSet(s)
		}
	}
}
