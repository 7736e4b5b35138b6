package endpointslice

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"plainkube.dev/plainkube/internal/controller/endpointutil"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "endpointslice"

// sliceChangeDelay is how long after an outside change to one of its
// slices the controller looks at the Service again, as upstream's
// endpointSliceChangeMinSyncDelay: changes come in bursts.
const sliceChangeDelay = time.Second

// missingNodeRetry is when a Service with pods on unknown nodes is looked
// at again.
const missingNodeRetry = 5 * time.Second

const podNodeIndex = "spec.nodeName"

// Controller is the EndpointSlice controller.
type Controller struct {
	controller.Base
	// MaxEndpointsPerSlice caps the endpoints in one slice; set before Run.
	MaxEndpointsPerSlice int

	tracker  *endpointutil.SliceTracker
	triggers *endpointutil.TriggerTimeTracker
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{
		Base:                 base,
		MaxEndpointsPerSlice: DefaultMaxEndpointsPerSlice,
		tracker:              endpointutil.NewSliceTracker(),
		triggers:             endpointutil.NewTriggerTimeTracker(),
	}, nil
}

type listers struct {
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	slices   discoverylisters.EndpointSliceLister
}

// Run watches Services, Pods, Nodes and the slices it manages, and keeps
// the slices of every Service with a selector in step, with workers
// workers, until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, QueueName: "endpoint_slice", Component: Name, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	svcInf := b.Informers().Core().V1().Services()
	podInf := b.SharedInformers().Core().V1().Pods()
	nodeInf := b.SharedInformers().Core().V1().Nodes()
	sliceInf := endpointutil.ManagedSliceInformer(b.Informers(), ControllerName)
	l := listers{
		services: svcInf.Lister(),
		pods:     podInf.Lister(),
		nodes:    nodeInf.Lister(),
		slices:   discoverylisters.NewEndpointSliceLister(sliceInf.GetIndexer()),
	}
	if err := reconcile.AddIndexer(podInf.Informer(), podNodeIndex, func(obj any) ([]string, error) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
			return []string{pod.Spec.NodeName}, nil
		}
		return nil, nil
	}); err != nil {
		return err
	}
	podServices := endpointutil.PodServices(l.services)
	b.For(svcInf.Informer(), corev1.SchemeGroupVersion.WithKind("Service")).
		Watches(podInf.Informer(), controller.AllEvents, podServices).
		// A node's zone goes into its pods' endpoints, and a pod on a node
		// not yet known is left out until the node shows up.
		Watches(nodeInf.Informer(), controller.Added|controller.Updated, func(old, obj any) []string {
			n, ok := obj.(*corev1.Node)
			if !ok {
				return nil
			}
			if o, ok := old.(*corev1.Node); old != nil && (!ok || o.Labels[corev1.LabelTopologyZone] == n.Labels[corev1.LabelTopologyZone]) {
				return nil
			}
			return nodePodServices(podInf.Informer().GetIndexer(), n.Name, podServices)
		}).
		Watches(sliceInf, controller.Added|controller.Updated, c.sliceChanged(b.Queue().AddAfter)).
		Watches(sliceInf, controller.Deleted, func(_, obj any) []string {
			if s, ok := obj.(*discoveryv1.EndpointSlice); ok && !c.tracker.HandleDeletion(s) {
				enqueueSliceService(b.Queue().AddAfter, s)
			}
			return nil
		})
	log := b.Logger()
	return b.Run(ctx, workers, func(record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, key string) (reconcile.Result, error) {
			return c.reconcile(ctx, log, l, key)
		}
	})
}

// sliceChanged looks again, after sliceChangeDelay, at the Service of a
// slice changed by someone else (both Services when the slice moved from
// one to another).
func (c *Controller) sliceChanged(addAfter func(string, time.Duration)) func(old, cur any) []string {
	return func(oldObj, obj any) []string {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return nil
		}
		if oldObj != nil {
			o, ok := oldObj.(*discoveryv1.EndpointSlice)
			if !ok {
				return nil
			}
			if o.Labels[discoveryv1.LabelServiceName] != s.Labels[discoveryv1.LabelServiceName] {
				enqueueSliceService(addAfter, o)
				enqueueSliceService(addAfter, s)
				return nil
			}
		}
		if c.tracker.ShouldSync(s) {
			enqueueSliceService(addAfter, s)
		}
		return nil
	}
}

// nodePodServices is the keys of the Services of the pods on node.
func nodePodServices(idx cache.Indexer, node string, podServices func(old, cur any) []string) []string {
	objs, err := idx.ByIndex(podNodeIndex, node)
	if err != nil {
		return nil
	}
	var keys []string
	for _, obj := range objs {
		keys = append(keys, podServices(nil, obj)...)
	}
	return keys
}

func enqueueSliceService(addAfter func(string, time.Duration), s *discoveryv1.EndpointSlice) {
	if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
		addAfter(s.Namespace+"/"+name, sliceChangeDelay)
	}
}

// reconcile makes the slices of the Service named by key match its pods.
func (c *Controller) reconcile(ctx context.Context, log *slog.Logger, l listers, key string) (reconcile.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return reconcile.Result{}, nil
	}
	nn := types.NamespacedName{Namespace: ns, Name: name}
	svc, err := l.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The garbage collector removes the slices through their owner
		// reference.
		c.triggers.Forget(ns, name)
		c.tracker.ForgetService(nn)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	// Services without a selector get their slices from elsewhere (the API
	// server for "kubernetes", or their users); ExternalName Services have
	// none.
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return reconcile.Result{}, nil
	}
	pods, err := l.pods.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return reconcile.Result{}, err
	}
	sel := labels.SelectorFromValidatedSet(labels.Set{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName})
	cached, err := l.slices.EndpointSlices(ns).List(sel)
	if err != nil {
		return reconcile.Result{}, err
	}
	existing := cached[:0:0]
	for _, s := range cached {
		if s.DeletionTimestamp == nil {
			existing = append(existing, s)
		}
	}
	if c.tracker.Stale(nn, existing) {
		return reconcile.Result{RequeueAfter: endpointutil.StaleRecheck}, nil
	}
	trigger := c.triggers.Compute(svc, pods)

	nodes := func(nodeName string) (string, bool) {
		node, err := l.nodes.Get(nodeName)
		if err != nil {
			return "", false
		}
		return node.Labels[corev1.LabelTopologyZone], true
	}
	p := plan(State{Service: svc, Pods: pods, Nodes: nodes, Existing: existing, MaxPerSlice: c.MaxEndpointsPerSlice})
	if err := c.apply(ctx, svc, p, trigger); err != nil {
		return reconcile.Result{}, err
	}
	if !p.Empty() {
		log.Debug("endpoint slices synced", "namespace", ns, "service", name,
			"created", len(p.Create), "updated", len(p.Update), "deleted", len(p.Delete))
	}
	if len(p.MissingNodes) > 0 {
		log.Info("pods on unknown nodes left out of endpoint slices", "namespace", ns, "service", name, "nodes", p.MissingNodes)
		return reconcile.Result{RequeueAfter: missingNodeRetry}, nil
	}
	return reconcile.Result{}, nil
}

// apply writes a plan: updates and creates (stamped with the trigger time),
// then deletes.
func (c *Controller) apply(ctx context.Context, svc *corev1.Service, p Plan, trigger time.Time) error {
	api := c.Client.DiscoveryV1().EndpointSlices(svc.Namespace)
	// No new slices for a Service being deleted: the garbage collector
	// would race them.
	if svc.DeletionTimestamp == nil {
		for _, s := range p.Create {
			setTriggerTime(s, trigger)
			created, err := api.Create(ctx, s, metav1.CreateOptions{})
			if err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				return fmt.Errorf("creating EndpointSlice for Service %s/%s: %w", svc.Namespace, svc.Name, err)
			}
			c.tracker.Written(created)
		}
	}
	for _, s := range p.Update {
		setTriggerTime(s, trigger)
		updated, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("updating EndpointSlice %s for Service %s/%s: %w", s.Name, svc.Namespace, svc.Name, err)
		}
		c.tracker.Written(updated)
	}
	for _, s := range p.Delete {
		err := api.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting EndpointSlice %s for Service %s/%s: %w", s.Name, svc.Namespace, svc.Name, err)
		}
		c.tracker.Deleted(s)
	}
	return nil
}

func setTriggerTime(s *discoveryv1.EndpointSlice, t time.Time) {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	if t.IsZero() {
		delete(s.Annotations, corev1.EndpointsLastChangeTriggerTime)
	} else {
		s.Annotations[corev1.EndpointsLastChangeTriggerTime] = t.UTC().Format(time.RFC3339Nano)
	}
}
