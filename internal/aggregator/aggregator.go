package aggregator

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	aeclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	aeinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	crdlisters "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggclientset "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
	agginformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	agglisters "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"

	"plainkube.dev/plainkube/internal/apiserver"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "apiservices"

// Installer is the API server's side (apiserver.Server).
type Installer interface {
	SetAggregatedAPIs([]apiserver.AggregatedAPI)
}

// Options configure the aggregator.
type Options struct {
	// ProxyClientCert is presented to aggregated servers (the front-proxy
	// client certificate).
	ProxyClientCert tls.Certificate
	// Local are the built-in group-versions this server serves; each gets
	// a local APIService.
	Local []schema.GroupVersion
	// DialContext opens connections to endpoints (nil: a net.Dialer).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	Logger      *slog.Logger
	// Registered, if set, is called once the local APIServices first
	// match what the server serves (upstream's autoregister-completion
	// readiness check).
	Registered func()
}

// Start runs the aggregator against cfg (a client of the API server) until
// ctx ends, installing the aggregated group-versions into api.
func Start(ctx context.Context, cfg *rest.Config, api Installer, opts Options) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	agg, err := aggclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ae, err := aeclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	core := informers.NewSharedInformerFactory(cs, 0)
	aggs := agginformers.NewSharedInformerFactory(agg, 0)
	crds := aeinformers.NewSharedInformerFactory(ae, 0)
	c, err := newController(agg.ApiregistrationV1(), aggs.Apiregistration().V1().APIServices().Informer(),
		core.Core().V1().Services().Informer(), core.Discovery().V1().EndpointSlices().Informer(),
		crds.Apiextensions().V1().CustomResourceDefinitions().Informer(), api, opts)
	if err != nil {
		return err
	}
	core.Start(ctx.Done())
	aggs.Start(ctx.Done())
	crds.Start(ctx.Done())
	go reconcile.RunAll(ctx, reconcile.WithWorkers(c, 2))
	return nil
}

// autoregisterKey is the queue key of the local APIServices' sync; every
// other key is an APIService's name.
const autoregisterKey = ""

// Controller keeps APIServices' status and the API server's aggregated
// group-versions in step with the APIServices, Services and EndpointSlices.
type Controller struct {
	client      aggclient.ApiregistrationV1Interface
	apiServices agglisters.APIServiceLister
	services    corelisters.ServiceLister
	slices      cache.Indexer
	crds        crdlisters.CustomResourceDefinitionLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	api         Installer
	opts        Options
	log         *slog.Logger

	mu sync.Mutex
	// served: the remote APIServices' group-versions, by APIService name.
	served map[string]served
}

// served is one remote APIService as installed in the API server.
type served struct {
	spec  apiregistrationv1.APIServiceSpec
	proxy *proxy
	api   apiserver.AggregatedAPI
}

const serviceIndex = "service"

func newController(client aggclient.ApiregistrationV1Interface, apiServices, services, slices, crds cache.SharedIndexInformer, api Installer, opts Options) (*Controller, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.DialContext == nil {
		opts.DialContext = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	c := &Controller{
		client: client, apiServices: agglisters.NewAPIServiceLister(apiServices.GetIndexer()),
		services: corelisters.NewServiceLister(services.GetIndexer()), slices: slices.GetIndexer(),
		crds:   crdlisters.NewCustomResourceDefinitionLister(crds.GetIndexer()),
		synced: []cache.InformerSynced{apiServices.HasSynced, services.HasSynced, slices.HasSynced, crds.HasSynced},
		queue:  reconcile.NewQueue[string](Name), api: api, opts: opts, log: opts.Logger.With("controller", Name),
		served: map[string]served{},
	}
	// EndpointSlices by the namespace/name of their Service.
	if err := reconcile.AddIndexer(slices, serviceIndex, func(obj any) ([]string, error) {
		s := obj.(*discoveryv1.EndpointSlice)
		if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
			return []string{s.Namespace + "/" + name}, nil
		}
		return nil, nil
	}); err != nil {
		return nil, err
	}
	if _, err := reconcile.AddHandler(apiServices, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.queue.Add(obj.(*apiregistrationv1.APIService).Name) },
		UpdateFunc: func(_, obj any) { c.queue.Add(obj.(*apiregistrationv1.APIService).Name) },
		DeleteFunc: func(obj any) {
			if a, ok := reconcile.DeletedObject[*apiregistrationv1.APIService](obj); ok {
				c.queue.Add(a.Name)
				c.queue.Add(autoregisterKey)
			}
		},
	}); err != nil {
		return nil, err
	}
	// A change of a Service or of its endpoints: look at the APIServices
	// naming it again.
	byService := func(namespace, name string) {
		list, err := c.apiServices.List(labels.Everything())
		if err != nil {
			return
		}
		for _, a := range list {
			if s := a.Spec.Service; s != nil && s.Namespace == namespace && s.Name == name {
				c.queue.Add(a.Name)
			}
		}
	}
	serviceEvent := func(obj any) {
		if s, ok := reconcile.DeletedObject[*corev1.Service](obj); ok {
			byService(s.Namespace, s.Name)
		}
	}
	sliceEvent := func(obj any) {
		if s, ok := reconcile.DeletedObject[*discoveryv1.EndpointSlice](obj); ok {
			byService(s.Namespace, s.Labels[discoveryv1.LabelServiceName])
		}
	}
	for inf, f := range map[cache.SharedIndexInformer]func(any){services: serviceEvent, slices: sliceEvent} {
		if _, err := reconcile.AddHandler(inf, cache.ResourceEventHandlerFuncs{
			AddFunc: f, UpdateFunc: func(_, obj any) { f(obj) }, DeleteFunc: f,
		}); err != nil {
			return nil, err
		}
	}
	autoregister := func(any) { c.queue.Add(autoregisterKey) }
	if _, err := reconcile.AddHandler(crds, cache.ResourceEventHandlerFuncs{
		AddFunc: autoregister, UpdateFunc: func(_, obj any) { autoregister(obj) }, DeleteFunc: autoregister,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) Name() string { return Name }

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.queue.Add(autoregisterKey)
	return reconcile.RunWhenSynced(ctx, c.queue, workers, c.log, c.reconcile, c.synced...)
}

// How often a remote APIService's availability is checked again: soon
// after a failure, as upstream's controller retries; at its resync period
// otherwise.
const (
	recheckFailed    = 5 * time.Second
	recheckAvailable = 30 * time.Second
)

func (c *Controller) reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	if key == autoregisterKey {
		err := c.autoregister(ctx)
		if err == nil && c.opts.Registered != nil {
			c.opts.Registered()
		}
		return reconcile.Result{}, err
	}
	a, err := c.apiServices.Get(key)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if a.Spec.Service == nil {
		c.forget(key)
		return reconcile.Result{}, c.setAvailable(ctx, a, localAvailable())
	}
	p := c.proxyFor(a)
	cond, docs := c.check(ctx, a, p)
	c.install(a, p, cond.Status == apiregistrationv1.ConditionTrue, docs)
	if err := c.setAvailable(ctx, a, cond); err != nil {
		return reconcile.Result{}, err
	}
	if cond.Status != apiregistrationv1.ConditionTrue {
		return reconcile.Result{RequeueAfter: recheckFailed}, nil
	}
	return reconcile.Result{RequeueAfter: recheckAvailable}, nil
}

// proxyFor is the proxy of a's current spec: the one installed, unless the
// spec changed since.
func (c *Controller) proxyFor(a *apiregistrationv1.APIService) *proxy {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.served[a.Name]; ok && equality.Semantic.DeepEqual(s.spec, a.Spec) {
		return s.proxy
	}
	return newProxy(c, a)
}

// install serves a's group-version through p (or answers 503 while it is
// not available), and tells the API server when that changed.
func (c *Controller) install(a *apiregistrationv1.APIService, p *proxy, available bool, docs backendDocs) {
	next := served{spec: *a.Spec.DeepCopy(), proxy: p, api: apiserver.AggregatedAPI{
		Group: a.Spec.Group, Version: a.Spec.Version,
		Priority: apiserver.Priority{Group: a.Spec.GroupPriorityMinimum, Version: a.Spec.VersionPriority},
	}}
	if available {
		next.api.Handler = p
	}
	c.mu.Lock()
	prev, had := c.served[a.Name]
	if docs.resources == nil && had && available {
		docs.resources = prev.api.Resources // a check that could not read it keeps the last one
	}
	next.api.Resources, next.api.OpenAPIV3URL = docs.resources, docs.openAPIV3
	if had && prev.proxy == next.proxy && (prev.api.Handler == nil) == (next.api.Handler == nil) && prev.api.OpenAPIV3URL == next.api.OpenAPIV3URL &&
		prev.api.Priority == next.api.Priority && equality.Semantic.DeepEqual(prev.api.Resources, next.api.Resources) {
		c.mu.Unlock()
		return
	}
	c.served[a.Name] = next
	c.publishLocked()
	c.mu.Unlock()
}

// forget stops serving the APIService name (deleted, or local now).
func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.served[name]; !ok {
		return
	}
	delete(c.served, name)
	c.publishLocked()
}

func (c *Controller) publishLocked() {
	names := make([]string, 0, len(c.served))
	for n := range c.served {
		names = append(names, n)
	}
	sort.Strings(names)
	apis := make([]apiserver.AggregatedAPI, 0, len(names))
	for _, n := range names {
		apis = append(apis, c.served[n].api)
	}
	c.api.SetAggregatedAPIs(apis)
}
