package resourcequota

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/api/quota"
	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name, as upstream's.
const Name = "resourcequota"

// Component is the source of the events the controller records.
const Component = "resourcequota-controller"

// resyncPeriod is how often every quota is recounted, as upstream's
// --resource-quota-sync-period.
const resyncPeriod = 5 * time.Minute

// countedByMetadata are the kinds only counted (by object), watched
// through their metadata.
var countedByMetadata = []schema.GroupVersionResource{
	corev1.SchemeGroupVersion.WithResource("configmaps"),
	corev1.SchemeGroupVersion.WithResource("secrets"),
	corev1.SchemeGroupVersion.WithResource("replicationcontrollers"),
	corev1.SchemeGroupVersion.WithResource("resourcequotas"),
}

// Controller is the resource quota controller.
type Controller struct {
	controller.Base

	metadata metadata.Interface
	now      func() time.Time
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's clients from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base, metadata: mc, now: time.Now}, nil
}

type run struct {
	ctx      context.Context
	client   kubernetes.Interface
	metadata metadata.Interface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	quotas   corelisters.ResourceQuotaLister
	typed    map[schema.GroupResource]func(namespace string) ([]runtime.Object, error)
	log      *slog.Logger
	now      func() time.Time
	queue    workqueue.TypedInterface[string]

	// monitored are the resources counted only through their metadata
	// whose deletes are watched (monitor).
	mu        sync.Mutex
	monitored map[schema.GroupVersionResource]bool
}

// Run watches quotas and the objects they count until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, QueueName: "resourcequota_primary", Component: Component, Client: c.Client, Logger: c.Logger,
		Primary: &corev1.ResourceQuota{}, Resync: resyncPeriod, Shared: c.Informers})
	qInf := b.Informers().Core().V1().ResourceQuotas()
	podInf := b.SharedInformers().Core().V1().Pods()
	svcInf := b.Informers().Core().V1().Services()
	pvcInf := b.Informers().Core().V1().PersistentVolumeClaims()
	r := &run{ctx: ctx, client: c.Client, metadata: c.metadata, quotas: qInf.Lister(), log: b.Logger(), now: c.now,
		queue: b.Queue(), monitored: map[schema.GroupVersionResource]bool{},
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery())),
		typed: map[schema.GroupResource]func(string) ([]runtime.Object, error){
			{Resource: "pods"}: func(ns string) ([]runtime.Object, error) {
				return objects(podInf.Lister().Pods(ns).List(labels.Everything()))
			},
			{Resource: "services"}: func(ns string) ([]runtime.Object, error) {
				return objects(svcInf.Lister().Services(ns).List(labels.Everything()))
			},
			{Resource: "persistentvolumeclaims"}: func(ns string) ([]runtime.Object, error) {
				return objects(pvcInf.Lister().PersistentVolumeClaims(ns).List(labels.Everything()))
			},
		}}
	b.Watches(qInf.Informer(), controller.Added|controller.Updated, quotaNeedsCount).
		Watches(podInf.Informer(), controller.Updated|controller.Deleted, r.onChange(podUsageChanged)).
		Watches(svcInf.Informer(), controller.Updated|controller.Deleted, r.onChange(serviceUsageChanged)).
		Watches(pvcInf.Informer(), controller.Updated|controller.Deleted, r.onChange(claimUsageChanged))
	mf := metadatainformer.NewSharedInformerFactory(c.metadata, 0)
	for _, gvr := range countedByMetadata {
		inf := mf.ForResource(gvr)
		b.Watches(inf.Informer(), controller.Deleted, r.onChange(nil))
		lister := inf.Lister()
		r.typed[gvr.GroupResource()] = func(ns string) ([]runtime.Object, error) {
			return lister.ByNamespace(ns).List(labels.Everything())
		}
	}
	mf.Start(ctx.Done())
	defer mf.Shutdown()
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return controller.Shape[State, Plan]{Observe: r.observe, Plan: plan, Apply: r.apply, Log: r.log}.Reconcile
	})
}

func objects[T runtime.Object](items []T, err error) ([]runtime.Object, error) {
	out := make([]runtime.Object, len(items))
	for i, o := range items {
		out[i] = o
	}
	return out, err
}

// quotaNeedsCount: a new quota, a periodic resync, or a quota whose spec
// changed or whose status lacks its limits or usage. The usage the
// admission plugin records is no reason: the objects it charged for may
// not be in the caches yet.
func quotaNeedsCount(old, cur any) []string {
	q, ok := cur.(*corev1.ResourceQuota)
	if !ok {
		return nil
	}
	key := []string{q.Namespace + "/" + q.Name}
	o, ok := old.(*corev1.ResourceQuota)
	if !ok || o.ResourceVersion == q.ResourceVersion || q.Status.Hard == nil || q.Status.Used == nil ||
		!equality.Semantic.DeepEqual(o.Spec, q.Spec) || !equality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) {
		return key
	}
	return nil
}

// onChange enqueues the quotas of an object's namespace when it is
// deleted or, on an update, when changed (nil: never) says its usage
// changed.
func (r *run) onChange(changed func(old, cur any) bool) func(old, cur any) []string {
	return func(old, cur any) []string {
		if old != nil && (changed == nil || !changed(old, cur)) {
			return nil
		}
		m, err := meta.Accessor(cur)
		if err != nil {
			return nil
		}
		quotas, _ := r.quotas.ResourceQuotas(m.GetNamespace()).List(labels.Everything())
		keys := make([]string, len(quotas))
		for i, q := range quotas {
			keys[i] = q.Namespace + "/" + q.Name
		}
		return keys
	}
}

// podUsageChanged: a pod that stopped counting (finished, or past its
// grace period) or moved between the Terminating scopes.
func podUsageChanged(old, cur any) bool {
	o, ok1 := old.(*corev1.Pod)
	c, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 {
		return false
	}
	now := time.Now()
	return quota.Counts(o, now) != quota.Counts(c, now) || quota.IsTerminating(o) != quota.IsTerminating(c)
}

func serviceUsageChanged(old, cur any) bool {
	o, ok1 := old.(*corev1.Service)
	c, ok2 := cur.(*corev1.Service)
	return ok1 && ok2 && (o.Spec.Type != c.Spec.Type || len(o.Spec.Ports) != len(c.Spec.Ports))
}

func claimUsageChanged(old, cur any) bool {
	o, ok1 := old.(*corev1.PersistentVolumeClaim)
	c, ok2 := cur.(*corev1.PersistentVolumeClaim)
	return ok1 && ok2 && (!equality.Semantic.DeepEqual(o.Spec.Resources.Requests, c.Spec.Resources.Requests) ||
		!equality.Semantic.DeepEqual(o.Status.AllocatedResources, c.Status.AllocatedResources))
}

// observe reads the quota and the objects of each resource it counts:
// from the caches for the kinds watched, else their metadata through the
// API (a resource the server does not serve has no objects).
func (r *run) observe(key string) (State, bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return State{}, false, nil
	}
	q, err := r.quotas.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	st := State{Quota: q, Objects: map[schema.GroupResource][]runtime.Object{}, Now: r.now()}
	for _, e := range quota.Evaluators(quota.Names(q.Spec.Hard)) {
		gr := e.GroupResource()
		var objs []runtime.Object
		if list, ok := r.typed[gr]; ok {
			objs, err = list(ns)
		} else {
			objs, err = r.listMetadata(gr, ns)
		}
		if err != nil {
			return State{}, false, err
		}
		st.Objects[gr] = objs
	}
	return st, true, nil
}

func (r *run) listMetadata(gr schema.GroupResource, ns string) ([]runtime.Object, error) {
	gvr, err := r.mapper.ResourceFor(gr.WithVersion(""))
	if meta.IsNoMatchError(err) {
		r.mapper.Reset()
		gvr, err = r.mapper.ResourceFor(gr.WithVersion(""))
	}
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.monitor(gvr)
	list, err := r.metadata.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// monitor watches the deletes of gvr's objects, once a quota counts them,
// so that a deleted object gives its unit back at once rather than at the
// next full recount (upstream's quota monitors watch every resource).
func (r *run) monitor(gvr schema.GroupVersionResource) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.monitored[gvr] {
		return
	}
	r.monitored[gvr] = true
	inf := metadatainformer.NewFilteredMetadataInformer(r.metadata, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	quotasOf := r.onChange(nil)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		gone, _ := reconcile.DeletedObject[any](obj)
		for _, key := range quotasOf(nil, gone) {
			r.queue.Add(key)
		}
	}}); err != nil {
		r.log.Warn("cannot watch deletes of a counted resource", "resource", gvr.String(), "err", err)
		return
	}
	go inf.Run(r.ctx.Done())
	// What was deleted before the watch began is seen by one more count.
	go func() {
		if !reconcile.WaitForCacheSync(r.ctx, inf.HasSynced) {
			return
		}
		quotas, _ := r.quotas.List(labels.Everything())
		for _, q := range quotas {
			r.queue.Add(q.Namespace + "/" + q.Name)
		}
	}()
}

// apply writes the planned status with the quota's resourceVersion; a
// conflict (the admission plugin charged in between) is retried.
func (r *run) apply(ctx context.Context, st State, p Plan) (reconcile.Result, error) {
	if p.Err != nil || !p.Write {
		return reconcile.Result{}, p.Err
	}
	q := st.Quota.DeepCopy()
	q.Status = p.Status
	_, err := r.client.CoreV1().ResourceQuotas(q.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err == nil {
		r.log.Debug("recounted quota", "namespace", q.Namespace, "quota", q.Name, "used", quota.String(p.Status.Used))
	}
	return reconcile.Result{}, err
}
