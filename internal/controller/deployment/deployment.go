package deployment

import (
	"context"
	"log/slog"
	"reflect"
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
const Name = "deployment"

// Component is the source of the events the controller records.
const Component = "deployment-controller"

// resyncPeriod is how often every deployment is looked at again.
const resyncPeriod = 5 * time.Minute

var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Controller is the deployment controller.
type Controller struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
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
	return &Controller{client: cs, now: time.Now}, nil
}

// Name implements reconcile.Controller.
func (c *Controller) Name() string { return Name }

// run is one Run of the controller: its informers, queue and recorder.
type run struct {
	client    kubernetes.Interface
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	queue     workqueue.TypedRateLimitingInterface[string]
	rec       record.EventRecorder
	log       *slog.Logger
	now       func() time.Time
}

// Run watches deployments, ReplicaSets and pods, and reconciles
// deployments with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	log := c.Logger
	if log == nil {
		log = slog.Default().With("controller", Name)
	}
	now := c.now
	if now == nil {
		now = time.Now
	}
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0,
		informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{&appsv1.Deployment{}: resyncPeriod}))
	dInf := factory.Apps().V1().Deployments()
	rsInf := factory.Apps().V1().ReplicaSets()
	sharedFactory := reconcile.SharedOr(c.Informers, factory)
	podInf := sharedFactory.Core().V1().Pods()
	rec, stop := events.NewRecorder(ctx, c.client, Component, log)
	defer stop()
	r := &run{client: c.client, dLister: dInf.Lister(), rsLister: rsInf.Lister(), podLister: podInf.Lister(),
		queue: reconcile.NewQueue[string]("deployment"), rec: rec, log: log, now: now}
	if _, err := dInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.enqueueObj,
		UpdateFunc: func(_, cur any) { r.enqueueObj(cur) },
		DeleteFunc: r.enqueueObj,
	}); err != nil {
		return err
	}
	if _, err := rsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: r.addReplicaSet, UpdateFunc: r.updateReplicaSet, DeleteFunc: r.deleteReplicaSet,
	}); err != nil {
		return err
	}
	removePodHandler, err := reconcile.AddHandler(podInf.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: r.deletePod})
	if err != nil {
		return err
	}
	defer removePodHandler()
	factory.Start(ctx.Done())
	sharedFactory.Start(ctx.Done())
	defer factory.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, "deployment informers", dInf.Informer().HasSynced, rsInf.Informer().HasSynced, podInf.Informer().HasSynced); !ok {
		r.queue.ShutDown()
		return err
	}
	log.Info("deployment controller synced")
	reconcile.ProcessQueue(ctx, r.queue, workers, log, r.sync)
	return nil
}

// ---- informer events ----

func (r *run) enqueueObj(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		r.queue.Add(t.Key)
		return
	}
	if d, ok := obj.(*appsv1.Deployment); ok {
		r.enqueue(d)
	}
}

func (r *run) enqueue(d *appsv1.Deployment) { r.queue.Add(d.Namespace + "/" + d.Name) }

func (r *run) addReplicaSet(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if rs.DeletionTimestamp != nil {
		r.deleteReplicaSet(rs)
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := r.resolveControllerRef(rs.Namespace, ref); d != nil {
			r.enqueue(d)
		}
		return
	}
	// An orphan: wake whoever might adopt it.
	for _, d := range r.deploymentsForReplicaSet(rs) {
		r.enqueue(d)
	}
}

func (r *run) updateReplicaSet(oldObj, curObj any) {
	old, ok1 := oldObj.(*appsv1.ReplicaSet)
	cur, ok2 := curObj.(*appsv1.ReplicaSet)
	if !ok1 || !ok2 || cur.ResourceVersion == old.ResourceVersion {
		return
	}
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if d := r.resolveControllerRef(old.Namespace, oldRef); d != nil {
			r.enqueue(d)
		}
	}
	if curRef != nil {
		if d := r.resolveControllerRef(cur.Namespace, curRef); d != nil {
			r.enqueue(d)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(cur.Labels, old.Labels) {
		for _, d := range r.deploymentsForReplicaSet(cur) {
			r.enqueue(d)
		}
	}
}

func (r *run) deleteReplicaSet(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := r.resolveControllerRef(rs.Namespace, ref); d != nil {
			r.enqueue(d)
		}
	}
}

// deletePod wakes a Recreate deployment waiting for its old pods to go.
func (r *run) deletePod(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	rs, err := r.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	rsRef := metav1.GetControllerOf(rs)
	if rsRef == nil {
		return
	}
	if d := r.resolveControllerRef(rs.Namespace, rsRef); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		r.enqueue(d)
	}
}

func (r *run) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	d, err := r.dLister.Deployments(namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

// deploymentsForReplicaSet are the deployments whose selector matches rs's
// labels.
func (r *run) deploymentsForReplicaSet(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	if len(rs.Labels) == 0 {
		return nil
	}
	ds, err := r.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.Deployment
	for _, d := range ds {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(rs.Labels)) {
			continue
		}
		out = append(out, d)
	}
	return out
}
