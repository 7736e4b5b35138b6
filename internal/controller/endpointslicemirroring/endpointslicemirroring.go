package endpointslicemirroring

import (
	"context"
	"fmt"
	"log/slog"

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
	"plainkube.dev/plainkube/internal/controller/endpointutil"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "endpointslicemirroring"

// component is the source of the events it records, as upstream.
const component = "endpoint-slice-mirroring-controller"

// Controller is the EndpointSliceMirroring controller.
type Controller struct {
	controller.Base
	// MaxEndpointsPerSubset caps the addresses mirrored from one subset;
	// set before Run.
	MaxEndpointsPerSubset int

	tracker *endpointutil.SliceTracker
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{
		Base:                  base,
		MaxEndpointsPerSubset: DefaultMaxEndpointsPerSubset,
		tracker:               endpointutil.NewSliceTracker(),
	}, nil
}

type listers struct {
	endpoints corelisters.EndpointsLister
	services  corelisters.ServiceLister
	slices    discoverylisters.EndpointSliceLister
}

// Run watches Endpoints, Services and the slices it manages, and keeps the
// slices mirroring every Endpoints of a Service without a selector, with
// workers workers, until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, QueueName: "endpoint_slice_mirroring", Component: component, Client: c.Client, Logger: c.Logger, Shared: c.Informers})
	epInf := b.Informers().Core().V1().Endpoints()
	svcInf := b.Informers().Core().V1().Services()
	sliceInf := endpointutil.ManagedSliceInformer(b.Informers(), ControllerName)
	l := listers{
		endpoints: epInf.Lister(),
		services:  svcInf.Lister(),
		slices:    discoverylisters.NewEndpointSliceLister(sliceInf.GetIndexer()),
	}
	b.Watches(epInf.Informer(), controller.AllEvents, endpointsChanged).
		Watches(svcInf.Informer(), controller.AllEvents, serviceChanged).
		Watches(sliceInf, controller.Added|controller.Updated, c.sliceChanged).
		Watches(sliceInf, controller.Deleted, func(_, obj any) []string {
			if s, ok := obj.(*discoveryv1.EndpointSlice); ok && !c.tracker.HandleDeletion(s) {
				return sliceEndpoints(s)
			}
			return nil
		})
	log := b.Logger()
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		return func(ctx context.Context, key string) (reconcile.Result, error) {
			return c.reconcile(ctx, log, rec, l, key)
		}
	})
}

// endpointsChanged names an Endpoints that is, or was, one to mirror.
func endpointsChanged(old, cur any) []string {
	ep, ok := cur.(*corev1.Endpoints)
	if !ok {
		return nil
	}
	prev, _ := old.(*corev1.Endpoints)
	if !ShouldMirror(ep) && !ShouldMirror(prev) {
		return nil
	}
	return []string{ep.Namespace + "/" + ep.Name}
}

// serviceChanged names the Endpoints of a Service without a selector that
// came or went, or of one that gained or lost its selector.
func serviceChanged(old, cur any) []string {
	svc, ok := cur.(*corev1.Service)
	if !ok {
		return nil
	}
	if prev, ok := old.(*corev1.Service); ok {
		if (prev.Spec.Selector == nil) == (svc.Spec.Selector == nil) {
			return nil
		}
	} else if svc.Spec.Selector != nil {
		return nil
	}
	return []string{svc.Namespace + "/" + svc.Name}
}

// sliceChanged names the Endpoints of a slice someone else changed (both
// Endpoints when the slice moved from one to another).
func (c *Controller) sliceChanged(old, cur any) []string {
	s, ok := cur.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil
	}
	if o, ok := old.(*discoveryv1.EndpointSlice); ok && o.Labels[discoveryv1.LabelServiceName] != s.Labels[discoveryv1.LabelServiceName] {
		return append(sliceEndpoints(o), sliceEndpoints(s)...)
	}
	if c.tracker.ShouldSync(s) {
		return sliceEndpoints(s)
	}
	return nil
}

func sliceEndpoints(s *discoveryv1.EndpointSlice) []string {
	if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
		return []string{s.Namespace + "/" + name}
	}
	return nil
}

// reconcile makes the mirrored slices of the Endpoints named by key match
// it.
func (c *Controller) reconcile(ctx context.Context, log *slog.Logger, rec record.EventRecorder, l listers, key string) (reconcile.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return reconcile.Result{}, nil
	}
	nn := types.NamespacedName{Namespace: ns, Name: name}
	st := State{MaxPerSubset: c.MaxEndpointsPerSubset}
	if st.Endpoints, err = l.endpoints.Endpoints(ns).Get(name); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if st.Service, err = l.services.Services(ns).Get(name); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	sel := labels.SelectorFromValidatedSet(labels.Set{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName})
	if st.Existing, err = l.slices.EndpointSlices(ns).List(sel); err != nil {
		return reconcile.Result{}, err
	}
	p := plan(st)
	if !p.Mirror {
		c.tracker.ForgetService(nn)
	} else if c.tracker.Stale(nn, st.Existing) {
		return reconcile.Result{RequeueAfter: endpointutil.StaleRecheck}, nil
	}
	for _, e := range p.Events {
		rec.Event(st.Endpoints, corev1.EventTypeWarning, e.Reason, e.Message)
	}
	if err := c.apply(ctx, nn, st.Endpoints, p); err != nil {
		return reconcile.Result{}, err
	}
	if !p.Empty() {
		log.Debug("mirrored endpoint slices synced", "namespace", ns, "endpoints", name,
			"created", len(p.Create), "updated", len(p.Update), "deleted", len(p.Delete))
	}
	return reconcile.Result{}, nil
}

// apply writes a plan: creates, updates, then deletes. The deletes of an
// Endpoints no longer mirrored are not tracked, as upstream: their echo
// only looks again at nothing.
func (c *Controller) apply(ctx context.Context, nn types.NamespacedName, ep *corev1.Endpoints, p Plan) error {
	api := c.Client.DiscoveryV1().EndpointSlices(nn.Namespace)
	// No new slices for an Endpoints being deleted: the garbage collector
	// would race them.
	if ep != nil && ep.DeletionTimestamp == nil {
		for _, s := range p.Create {
			created, err := api.Create(ctx, s, metav1.CreateOptions{})
			if err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				return fmt.Errorf("creating EndpointSlice for Endpoints %s: %w", nn, err)
			}
			c.tracker.Written(created)
		}
	}
	for _, s := range p.Update {
		updated, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("updating EndpointSlice %s for Endpoints %s: %w", s.Name, nn, err)
		}
		c.tracker.Written(updated)
	}
	for _, s := range p.Delete {
		err := api.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting EndpointSlice %s for Endpoints %s: %w", s.Name, nn, err)
		}
		if p.Mirror {
			c.tracker.Deleted(s)
		}
	}
	return nil
}
