package controller

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/controller/events"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Builder wires one Run of a controller: its informers, the events that
// put keys into its queue, the event recorder, and the worker loop. A
// controller makes a Builder at the start of each Run, asks it for
// informers, says what it watches (For, Owns, Watches), and hands it its
// reconcile function (Run).
//
// Keys are "namespace/name" of the primary kind (or "name" for a
// cluster-scoped one), as cache.MetaNamespaceKeyFunc makes them.
type Builder struct {
	name      string
	component string
	client    kubernetes.Interface
	log       *slog.Logger
	own       informers.SharedInformerFactory
	shared    informers.SharedInformerFactory
	queue     workqueue.TypedRateLimitingInterface[string]

	primary     cache.SharedIndexInformer
	primaryKind schema.GroupVersionKind
	onDelete    func(key string)
	updateDelay func(old, cur any) time.Duration
	handlers    []registration
	extra       []extraQueue
	synced      []cache.InformerSynced
	onSynced    []func()
}

// extraQueue is a second queue a Run drains alongside the controller's
// own (see Process).
type extraQueue struct {
	queue   workqueue.TypedRateLimitingInterface[string]
	workers int
	fn      reconcile.ReconcileFunc[string]
}

type registration struct {
	informer cache.SharedIndexInformer
	handler  cache.ResourceEventHandler
}

// Config is what a Builder needs to know before any informer is made.
type Config struct {
	// Name names the controller (and its queue, unless QueueName does).
	Name string
	// QueueName names the queue in the workqueue_* metrics, where
	// upstream's differs from Name (endpoint_slice, horizontalpodautoscaler…)
	// so that dashboards written for upstream find it.
	QueueName string
	// Component is the source of the events the controller records.
	Component string
	Client    kubernetes.Interface
	// Logger defaults to slog.Default() with the controller's name.
	Logger *slog.Logger
	// Primary is an object of the primary kind (e.g. &appsv1.Deployment{}),
	// which the own factory resyncs every Resync (0: never).
	Primary runtime.Object
	Resync  time.Duration
	// Shared is the process's shared informer factory, for Pods and Nodes
	// (see reconcile.SharedInformers); nil: the controller's own factory
	// serves them too. When set, the own factory lists and watches with
	// its client rather than Client.
	Shared *reconcile.SharedInformers
	// Queue is the controller's work queue (e.g. a reconcile.ClockQueue,
	// whose delays follow an injected clock); nil: a new rate-limited
	// queue named Name.
	Queue workqueue.TypedRateLimitingInterface[string]
}

// NewBuilder starts wiring one Run of a controller.
func NewBuilder(c Config) *Builder {
	log := loggerFor(c.Logger, c.Name)
	var opts []informers.SharedInformerOption
	if c.Primary != nil && c.Resync > 0 {
		if o, ok := c.Primary.(metav1.Object); ok {
			opts = append(opts, informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{o: c.Resync}))
		}
	}
	// Reads as the process's informers do, when it has shared ones (as
	// upstream's controllers list and watch with the manager's client and
	// write with their own).
	reads := c.Client
	if c.Shared != nil {
		reads = c.Shared.Client()
	}
	own := informers.NewSharedInformerFactoryWithOptions(reads, 0, opts...)
	b := &Builder{
		name: c.Name, component: c.Component, client: c.Client, log: log,
		own: own, shared: reconcile.SharedOr(c.Shared, own),
		queue: c.Queue,
	}
	if b.queue == nil {
		name := c.QueueName
		if name == "" {
			name = c.Name
		}
		b.queue = reconcile.NewQueue[string](name)
	}
	return b
}

// Informers is the controller's own informer factory (every kind but Pods
// and Nodes).
func (b *Builder) Informers() informers.SharedInformerFactory { return b.own }

// SharedInformers is the factory for Pods and Nodes: the process's shared
// one, else the controller's own.
func (b *Builder) SharedInformers() informers.SharedInformerFactory { return b.shared }

// Queue is the controller's work queue, for a controller that adds keys
// itself (a delayed look, a batch of pod events).
func (b *Builder) Queue() workqueue.TypedRateLimitingInterface[string] { return b.queue }

// Logger is the controller's logger.
func (b *Builder) Logger() *slog.Logger { return b.log }

// For makes inf's objects, of kind, the controller's primary objects: each
// add, update, delete (and resync) of one enqueues its key.
func (b *Builder) For(inf cache.SharedIndexInformer, kind schema.GroupVersionKind) *Builder {
	b.primary, b.primaryKind = inf, kind
	b.add(inf, cache.ResourceEventHandlerFuncs{
		AddFunc: b.enqueueKeyOf,
		UpdateFunc: func(oldObj, cur any) {
			if b.onDelete != nil {
				old, ok1 := oldObj.(metav1.Object)
				c, ok2 := cur.(metav1.Object)
				if ok1 && ok2 && old.GetUID() != c.GetUID() {
					// Deleted and made again under the same name between
					// two events.
					b.deleted(oldObj)
				}
			}
			if b.updateDelay != nil {
				if key, ok := PrimaryKey(cur); ok {
					b.queue.AddAfter(key, b.updateDelay(oldObj, cur))
				}
				return
			}
			b.enqueueKeyOf(cur)
		},
		DeleteFunc: func(obj any) {
			b.deleted(obj)
			b.enqueueKeyOf(obj)
		},
	})
	return b
}

// OnDelete calls forget with a primary's key when the primary is deleted
// (or replaced by another object of the same name): to drop what the
// controller remembers of it, such as its Expectations.
func (b *Builder) OnDelete(forget func(key string)) *Builder {
	b.onDelete = forget
	return b
}

// DelayUpdates makes an update of a primary wait delay(old, cur) before
// its key is looked at (0: at once), so that a burst of updates (the
// controller's own status writes) makes one reconcile.
func (b *Builder) DelayUpdates(delay func(old, cur any) time.Duration) *Builder {
	b.updateDelay = delay
	return b
}

func (b *Builder) deleted(obj any) {
	if b.onDelete == nil {
		return
	}
	if key, ok := PrimaryKey(obj); ok {
		b.onDelete(key)
	}
}

// OwnOptions say what else an owned kind's events do.
type OwnOptions struct {
	// OrphanSelector, if set, makes an orphan (an object with no
	// controller) enqueue every primary in its namespace whose selector,
	// given by this function, matches the orphan's labels: one of them may
	// adopt it. Primaries with a nil or empty selector match nothing, and
	// so does an orphan without labels.
	OrphanSelector func(primary metav1.Object) labels.Selector
	// Observed, if set, is called for each event on an object whose
	// controller resolves, with that controller's key, before the keys are
	// enqueued: for Expectations, or to look again later. old is nil but
	// for Updated; a resync (same resourceVersion) is no event.
	Observed func(ownerKey string, event Event, old, cur metav1.Object)
	// Delay, if set, is how long the keys an event names wait in the queue,
	// so that a burst of events on the owned objects makes one reconcile.
	Delay time.Duration
}

// Owns makes the primary kind the controller of inf's objects: an event on
// one enqueues its controller (an owner reference of the primary kind with
// controller true, whose UID matches the primary in the cache); an update
// that changed the controller reference enqueues the old owner and the new.
func (b *Builder) Owns(inf cache.SharedIndexInformer, o OwnOptions) *Builder {
	m := ownedMapper{resolve: b.resolveOwner}
	if o.OrphanSelector != nil {
		m.orphans = b.orphanOwners(o.OrphanSelector)
	}
	enqueue := b.enqueue
	if o.Delay > 0 {
		enqueue = func(keys []string) {
			for _, k := range keys {
				b.queue.AddAfter(k, o.Delay)
			}
		}
	}
	observe := func(event Event, old, cur metav1.Object) {
		if o.Observed == nil {
			return
		}
		if key, ok := b.resolveOwner(cur.GetNamespace(), metav1.GetControllerOfNoCopy(cur)); ok {
			o.Observed(key, event, old, cur)
		}
	}
	b.add(inf, cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if cur, ok := obj.(metav1.Object); ok {
				observe(Added, nil, cur)
				enqueue(m.added(cur))
			}
		},
		UpdateFunc: func(oldObj, curObj any) {
			old, ok1 := oldObj.(metav1.Object)
			cur, ok2 := curObj.(metav1.Object)
			if ok1 && ok2 && old.GetResourceVersion() != cur.GetResourceVersion() {
				observe(Updated, old, cur)
				enqueue(m.updated(old, cur))
			}
		},
		DeleteFunc: func(obj any) {
			if cur, ok := reconcile.DeletedObject[metav1.Object](obj); ok {
				observe(Deleted, nil, cur)
				enqueue(m.deleted(cur))
			}
		},
	})
	return b
}

// Event is the kind of informer event a Watches map function is called
// for.
type Event int

const (
	Added Event = 1 << iota
	Updated
	Deleted
	AllEvents = Added | Updated | Deleted
)

// Watches calls keys for each event of the given kinds on inf's objects
// and enqueues the keys it returns. old is the previous object on Updated
// (nil otherwise); cur is the object, on Deleted its last state (a
// tombstone unwrapped).
func (b *Builder) Watches(inf cache.SharedIndexInformer, on Event, keys func(old, cur any) []string) *Builder {
	h := cache.ResourceEventHandlerFuncs{}
	if on&Added != 0 {
		h.AddFunc = func(obj any) { b.enqueue(keys(nil, obj)) }
	}
	if on&Updated != 0 {
		h.UpdateFunc = func(old, cur any) { b.enqueue(keys(old, cur)) }
	}
	if on&Deleted != 0 {
		h.DeleteFunc = func(obj any) {
			obj, _ = reconcile.DeletedObject[any](obj)
			b.enqueue(keys(nil, obj))
		}
	}
	b.add(inf, h)
	return b
}

// WaitsFor adds informers to wait for before the workers start, beyond
// those the controller watches (an informer read only through its lister).
func (b *Builder) WaitsFor(infs ...cache.SharedIndexInformer) *Builder {
	for _, inf := range infs {
		b.synced = append(b.synced, inf.HasSynced)
	}
	return b
}

// OnSynced runs f once the informers have synced, before the workers
// start: to enqueue what only a full cache shows (objects left behind
// while the controller was not running).
func (b *Builder) OnSynced(f func()) *Builder {
	b.onSynced = append(b.onSynced, f)
	return b
}

// Process drains another queue with workers workers of fn, alongside
// the controller's own, once the informers have synced: work keyed by
// something other than the primary (the Job controller's orphaned pods).
func (b *Builder) Process(q workqueue.TypedRateLimitingInterface[string], workers int, fn reconcile.ReconcileFunc[string]) *Builder {
	b.extra = append(b.extra, extraQueue{q, workers, fn})
	return b
}

// Owner is the primary object that ref (an owner reference of an object in
// namespace) names, if it is of the primary kind and in the cache with
// ref's UID: what a controller's Watches map functions resolve through.
func (b *Builder) Owner(namespace string, ref *metav1.OwnerReference) (metav1.Object, bool) {
	if ref == nil || ref.Kind != b.primaryKind.Kind || b.primary == nil {
		return nil, false
	}
	key := ref.Name
	if namespace != "" {
		key = namespace + "/" + ref.Name
	}
	obj, exists, err := b.primary.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	o, err := meta.Accessor(obj)
	if err != nil || o.GetUID() != ref.UID {
		return nil, false
	}
	return o, true
}

// Run records events as the controller's component, starts the informers,
// waits for them, and runs workers workers of the reconcile function
// newReconcile returns (given the recorder) until ctx ends. Handlers on
// shared informers are removed when it returns.
func (b *Builder) Run(ctx context.Context, workers int, newReconcile func(record.EventRecorder) reconcile.ReconcileFunc[string]) error {
	// The recorder is in place before any handler runs, so that handlers
	// may record events too.
	rec, stop := events.NewRecorder(ctx, b.client, b.component, b.log)
	defer stop()
	reconcileFn := newReconcile(rec)
	for _, r := range b.handlers {
		remove, err := reconcile.AddHandler(r.informer, r.handler)
		if err != nil {
			return err
		}
		defer remove()
	}
	b.own.Start(ctx.Done())
	b.shared.Start(ctx.Done())
	defer b.own.Shutdown()
	if ok, err := reconcile.WaitForSync(ctx, b.name+" informers", b.synced...); !ok {
		b.queue.ShutDown()
		for _, x := range b.extra {
			x.queue.ShutDown()
		}
		return err
	}
	for _, f := range b.onSynced {
		f()
	}
	b.log.Info("controller synced")
	reconcile.ReportSynced(ctx)
	var wg sync.WaitGroup
	for _, x := range b.extra {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reconcile.ProcessQueue(ctx, x.queue, x.workers, b.log, x.fn)
		}()
	}
	reconcile.ProcessQueue(ctx, b.queue, workers, b.log, reconcileFn)
	wg.Wait()
	return nil
}

func (b *Builder) add(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) {
	b.handlers = append(b.handlers, registration{inf, h})
	b.synced = append(b.synced, inf.HasSynced)
}

func (b *Builder) enqueue(keys []string) {
	for _, k := range keys {
		b.queue.Add(k)
	}
}

// enqueueKeyOf enqueues a primary object's key, or a tombstone's.
func (b *Builder) enqueueKeyOf(obj any) {
	if key, ok := PrimaryKey(obj); ok {
		b.queue.Add(key)
	}
}

// PrimaryKey is the queue key of a primary object, or of the object a
// tombstone stands for.
func PrimaryKey(obj any) (string, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Key, true
	}
	key, err := cache.MetaNamespaceKeyFunc(obj)
	return key, err == nil
}

func (b *Builder) resolveOwner(namespace string, ref *metav1.OwnerReference) (string, bool) {
	if ref == nil {
		return "", false
	}
	o, ok := b.Owner(namespace, ref)
	if !ok {
		return "", false
	}
	key, err := cache.MetaNamespaceKeyFunc(o)
	return key, err == nil
}

// orphanOwners lists the primaries whose selector matches obj.
func (b *Builder) orphanOwners(selectorOf func(metav1.Object) labels.Selector) func(metav1.Object) []string {
	return func(obj metav1.Object) []string {
		if b.primary == nil || len(obj.GetLabels()) == 0 {
			return nil
		}
		var candidates []any
		if obj.GetNamespace() == "" {
			candidates = b.primary.GetStore().List()
		} else {
			candidates, _ = b.primary.GetIndexer().ByIndex(cache.NamespaceIndex, obj.GetNamespace())
		}
		var keys []string
		for _, c := range candidates {
			p, err := meta.Accessor(c)
			if err != nil || !selects(selectorOf(p), obj.GetLabels()) {
				continue
			}
			if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
				keys = append(keys, key)
			}
		}
		return keys
	}
}

// selects reports whether a non-empty selector matches the labels.
func selects(sel labels.Selector, l map[string]string) bool {
	return sel != nil && !sel.Empty() && sel.Matches(labels.Set(l))
}

// LabelSelector is s as a labels.Selector, nil if it does not parse.
func LabelSelector(s *metav1.LabelSelector) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil
	}
	return sel
}

// ownedMapper maps events on owned objects to the keys of the primaries to
// look at, as pure functions of the objects, an owner lookup and an orphan
// lookup.
type ownedMapper struct {
	// resolve is the key of the primary ref names, if it exists with ref's UID.
	resolve func(namespace string, ref *metav1.OwnerReference) (string, bool)
	// orphans are the keys of the primaries that may adopt an orphan; nil:
	// orphans wake no one.
	orphans func(obj metav1.Object) []string
}

func (m ownedMapper) owner(obj metav1.Object, ref *metav1.OwnerReference) []string {
	if k, ok := m.resolve(obj.GetNamespace(), ref); ok {
		return []string{k}
	}
	return nil
}

// added: the owner; an orphan (not being deleted) wakes whoever may adopt it.
func (m ownedMapper) added(obj metav1.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return m.owner(obj, ref)
	}
	if obj.GetDeletionTimestamp() != nil || m.orphans == nil {
		return nil
	}
	return m.orphans(obj)
}

// updated: a resync (same resourceVersion) is nothing; a changed
// controller reference wakes the old owner too; an orphan whose labels or
// reference changed wakes whoever may adopt it.
func (m ownedMapper) updated(old, cur metav1.Object) []string {
	if old.GetResourceVersion() == cur.GetResourceVersion() {
		return nil
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	var keys []string
	if refChanged && oldRef != nil {
		keys = append(keys, m.owner(old, oldRef)...)
	}
	if curRef != nil {
		return appendNew(keys, m.owner(cur, curRef)...)
	}
	if m.orphans != nil && (refChanged || !reflect.DeepEqual(cur.GetLabels(), old.GetLabels())) {
		keys = appendNew(keys, m.orphans(cur)...)
	}
	return keys
}

// deleted: the owner.
func (m ownedMapper) deleted(obj metav1.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return m.owner(obj, ref)
	}
	return nil
}

func appendNew(keys []string, more ...string) []string {
	for _, k := range more {
		seen := false
		for _, have := range keys {
			seen = seen || have == k
		}
		if !seen {
			keys = append(keys, k)
		}
	}
	return keys
}

// ToNamespace is a Watches map function for a controller whose keys are
// Namespace names: an event on an object that keep accepts looks at the
// object's namespace.
func ToNamespace(keep func(metav1.Object) bool) func(old, cur any) []string {
	return func(_, cur any) []string {
		if o, ok := cur.(metav1.Object); ok && keep(o) {
			return []string{o.GetNamespace()}
		}
		return nil
	}
}
