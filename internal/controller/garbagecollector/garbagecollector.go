package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "garbagecollector"

// DefaultSyncPeriod is how often discovery is read again for new or
// removed resources.
const DefaultSyncPeriod = 30 * time.Second

// DefaultIgnoredResources are never watched or collected, as upstream:
// events are many, short-lived, and never own anything.
func DefaultIgnoredResources() map[schema.GroupResource]bool {
	return map[schema.GroupResource]bool{
		{Group: "", Resource: "events"}:              true,
		{Group: "events.k8s.io", Resource: "events"}: true,
	}
}

// Controller is the garbage collector.
type Controller struct {
	controller.Base
	// SyncPeriod is how often discovery is re-read; set before Run.
	SyncPeriod time.Duration
	// Ignored resources are neither watched nor collected; set before Run.
	Ignored map[schema.GroupResource]bool

	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the collector's clients from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc := base.Client.Discovery()
	return &Controller{
		Base:       base,
		SyncPeriod: DefaultSyncPeriod,
		Ignored:    DefaultIgnoredResources(),
		metadata:   md,
		discovery:  dc,
		mapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
	}, nil
}

// Run watches every deletable resource, builds the graph, and runs workers
// attemptToDelete and workers attemptToOrphan workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	r := &run{
		Controller:      c,
		log:             c.Log(),
		graph:           NewGraph(),
		graphChanges:    workqueue.NewTyped[*Event](),
		attemptToDelete: reconcile.NewQueue[types.UID]("garbage_collector_attempt_to_delete"),
		attemptToOrphan: reconcile.NewQueue[types.UID]("garbage_collector_attempt_to_orphan"),
		monitors:        map[schema.GroupVersionResource]*monitor{},
		unmonitored:     make(chan struct{}, 1),
	}
	return r.run(ctx, workers)
}

// run is one Run of the collector: its graph, queues and informers.
type run struct {
	*Controller
	log *slog.Logger

	mu    sync.Mutex // guards graph
	graph *Graph

	graphChanges    workqueue.TypedInterface[*Event]
	pendingChanges  atomic.Int64 // events added and not yet applied
	attemptToDelete workqueue.TypedRateLimitingInterface[types.UID]
	attemptToOrphan workqueue.TypedRateLimitingInterface[types.UID]

	monitorsMu sync.Mutex
	monitors   map[schema.GroupVersionResource]*monitor
	wg         sync.WaitGroup // informers
	// unmonitored asks for discovery to be read again before SyncPeriod
	// is over: a reference names a kind no monitor watches (a custom
	// resource whose CRD came after the last read).
	unmonitored chan struct{}
}

// minMonitorSyncInterval spaces the discovery reads that references to
// unmonitored kinds ask for.
const minMonitorSyncInterval = 200 * time.Millisecond

var (
	errVirtualDeleteEnqueued          = errors.New("enqueued virtual delete event")
	errNamespacedOwnerOfClusterScoped = errors.New("cluster-scoped objects cannot refer to namespaced owners")
)

// restMappingError: the kind of a reference is not (yet) known to discovery.
type restMappingError struct {
	kind, version string
}

func (e *restMappingError) Error() string {
	return fmt.Sprintf("unable to get REST mapping for %s/%s", e.kind, e.version)
}

func (r *run) run(ctx context.Context, workers int) error {
	defer r.attemptToDelete.ShutDown()
	defer r.attemptToOrphan.ShutDown()
	graphDone := make(chan struct{})
	go func() {
		defer close(graphDone)
		r.processGraphChanges()
	}()
	defer func() {
		r.stopMonitors()
		r.graphChanges.ShutDown()
		<-graphDone
	}()

	if err := r.syncMonitors(ctx); err != nil {
		r.log.Warn("discovering deletable resources", "err", err)
		if r.monitorCount() == 0 {
			return fmt.Errorf("discovering deletable resources: %w", err)
		}
	}
	if !r.waitForSync(ctx, 30*time.Second) && ctx.Err() == nil {
		r.log.Info("not all resource monitors synced; proceeding anyway")
	}
	if ctx.Err() != nil {
		return nil
	}
	r.log.Info("garbage collector synced", "resources", r.monitorCount())
	reconcile.ReportSynced(ctx)

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		reconcile.ProcessQueue(ctx, r.attemptToDelete, workers, r.log, r.attemptToDeleteWorker)
	}()
	go func() {
		defer wg.Done()
		reconcile.ProcessQueue(ctx, r.attemptToOrphan, workers, r.log, r.attemptToOrphanWorker)
	}()

	period := r.SyncPeriod
	if period <= 0 {
		period = DefaultSyncPeriod
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-t.C:
		case <-r.unmonitored:
		}
		r.mapper.Reset()
		if err := r.syncMonitors(ctx); err != nil {
			r.log.Warn("discovering deletable resources", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(minMonitorSyncInterval):
		}
	}
}

// watchKind asks for discovery to be read again soon if no monitor
// watches id's kind, so that a custom resource made after the last read
// is watched (and its deletion seen) within a fraction of a second rather
// than at the next SyncPeriod.
func (r *run) watchKind(id Identity) {
	gv, err := schema.ParseGroupVersion(id.APIVersion)
	if err != nil {
		return
	}
	gvk := gv.WithKind(id.Kind)
	r.monitorsMu.Lock()
	for _, m := range r.monitors {
		if m.gvk == gvk {
			r.monitorsMu.Unlock()
			return
		}
	}
	r.monitorsMu.Unlock()
	select {
	case r.unmonitored <- struct{}{}:
	default:
	}
}

// processGraphChanges applies informer and virtual events to the graph, one
// at a time, and queues what they ask for.
func (r *run) processGraphChanges() {
	for {
		ev, quit := r.graphChanges.Get()
		if quit {
			return
		}
		r.mu.Lock()
		acts := r.graph.Apply(*ev)
		r.mu.Unlock()
		r.graphChanges.Done(ev)
		r.pendingChanges.Add(-1)
		for _, uid := range acts.AttemptToDelete {
			r.attemptToDelete.Add(uid)
		}
		for _, uid := range acts.AttemptToOrphan {
			r.attemptToOrphan.Add(uid)
		}
	}
}

func (r *run) node(uid types.UID) (NodeInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.graph.Node(uid)
}

// virtualDelete tells the graph that a live read found no object id.
func (r *run) virtualDelete(id Identity) {
	r.addGraphChange(&Event{Type: Delete, Virtual: true, Object: id})
}

func (r *run) addGraphChange(ev *Event) {
	r.pendingChanges.Add(1)
	r.graphChanges.Add(ev)
}

// ---- attemptToDelete ----

func (r *run) attemptToDeleteWorker(ctx context.Context, uid types.UID) (reconcile.Result, error) {
	info, ok := r.node(uid)
	if !ok {
		return reconcile.Result{}, nil // gone from the graph meanwhile
	}
	err := r.attemptToDeleteItem(ctx, info)
	switch {
	case errors.Is(err, errVirtualDeleteEnqueued):
		return reconcile.Result{}, nil
	case errors.Is(err, errNamespacedOwnerOfClusterScoped):
		r.log.Info("cluster-scoped object refers to a namespaced owner; ignoring it", "object", info.Identity.String())
		return reconcile.Result{}, nil
	case err != nil:
		var rme *restMappingError
		if errors.As(err, &rme) {
			// A kind discovery does not know (yet): a custom resource not
			// synced, or a bad reference. Retry quietly.
			r.log.Debug("cannot map a referenced kind; will retry", "object", info.Identity.String(), "err", err)
			r.watchKind(info.Identity)
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, fmt.Errorf("%s: %w", info.Identity, err)
	}
	if now, ok := r.node(uid); ok && !now.Observed {
		// A virtual node that exists: look again until an informer
		// reports it, or a read finds it gone.
		r.watchKind(info.Identity)
		return reconcile.Result{Requeue: true}, nil
	}
	return reconcile.Result{}, nil
}

// attemptToDeleteItem reads the object live and deletes it, or patches its
// references, as plan says; or, for an object deleting its dependents,
// queues them or removes its foregroundDeletion finalizer.
func (r *run) attemptToDeleteItem(ctx context.Context, item NodeInfo) error {
	if item.BeingDeleted && !item.DeletingDependents {
		// Being deleted is a one-way trip: wait for the delete event.
		return nil
	}
	latest, err := r.getObject(ctx, item.Identity)
	switch {
	case apierrors.IsNotFound(err):
		r.virtualDelete(item.Identity)
		return errVirtualDeleteEnqueued
	case err != nil:
		return err
	}
	if latest.GetUID() != item.Identity.UID {
		r.virtualDelete(item.Identity)
		return errVirtualDeleteEnqueued
	}
	if item.DeletingDependents {
		return r.apply(ctx, item, plan(State{DeletingDependents: true, Blocking: item.BlockingDependents()}))
	}
	if latest.GetDeletionTimestamp() != nil {
		// Already being deleted, and the graph has not caught up: its
		// update event brings the object back if it waits for dependents.
		return nil
	}
	owners := latest.GetOwnerReferences()
	if len(owners) == 0 {
		return nil
	}
	refs, err := r.classifyReferences(ctx, item.Identity, owners)
	if err != nil {
		return err
	}
	return r.apply(ctx, item, plan(State{Refs: refs, Finalizers: latest.GetFinalizers(), Dependents: item.Dependents}))
}

// apply carries out the plan for one object.
func (r *run) apply(ctx context.Context, item NodeInfo, d Plan) error {
	switch d.kind {
	case actRemoveFinalizer:
		r.log.Info("no blocking dependents left; removing the foregroundDeletion finalizer", "object", item.Identity.String())
		return r.removeFinalizer(ctx, item.Identity, metav1.FinalizerDeleteDependents)
	case actAttemptDependents:
		for _, uid := range d.attempt {
			r.attemptToDelete.Add(uid)
		}
	case actRemoveReferences:
		r.log.Info("removing dangling owner references", "object", item.Identity.String(), "owners", d.removeUIDs)
		return r.removeOwnerReferences(ctx, item.Identity, d.removeUIDs)
	case actDelete:
		if d.unblock {
			r.log.Info("making owner references non-blocking to avoid a cycle", "object", item.Identity.String())
			if err := r.unblockOwnerReferences(ctx, item.Identity); err != nil {
				return err
			}
		}
		r.log.Info("deleting object", "object", item.Identity.String(), "propagationPolicy", d.policy)
		return r.deleteObject(ctx, item.Identity, d.policy)
	}
	return nil
}

// classifyReferences reads each owner live.
func (r *run) classifyReferences(ctx context.Context, item Identity, owners []metav1.OwnerReference) (references, error) {
	var refs references
	for _, ref := range owners {
		dangling, owner, err := r.isDangling(ctx, ref, item)
		if err != nil {
			return references{}, err
		}
		if dangling {
			refs.dangling = append(refs.dangling, ref)
			continue
		}
		refs.addExisting(ref, owner)
	}
	return refs, nil
}

// isDangling reports whether ref names an object that does not exist (or
// exists with another UID); if it exists, it returns its live metadata.
func (r *run) isDangling(ctx context.Context, ref metav1.OwnerReference, item Identity) (bool, metav1.Object, error) {
	key := referenceIdentity(ref, "")
	nsKey := referenceIdentity(ref, item.Namespace)
	r.mu.Lock()
	absent := r.graph.IsAbsent(key) || r.graph.IsAbsent(nsKey)
	r.mu.Unlock()
	if absent {
		return true, nil, nil
	}
	gvr, namespaced, err := r.resourceFor(ref.APIVersion, ref.Kind)
	if err != nil {
		return false, nil, err
	}
	if namespaced {
		key = nsKey
		if item.Namespace == "" {
			return false, nil, errNamespacedOwnerOfClusterScoped
		}
	}
	owner, err := r.metadata.Resource(gvr).Namespace(key.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, nil, err
	case owner.UID != ref.UID:
	default:
		return false, owner, nil
	}
	r.mu.Lock()
	r.graph.MarkAbsent(key)
	r.mu.Unlock()
	return true, nil, nil
}

// ---- attemptToOrphan ----

// attemptToOrphanWorker removes the owner's reference from each of its
// dependents, then the owner's orphan finalizer.
func (r *run) attemptToOrphanWorker(ctx context.Context, uid types.UID) (reconcile.Result, error) {
	info, ok := r.node(uid)
	if !ok {
		return reconcile.Result{}, nil
	}
	var errs []error
	for _, d := range info.Dependents {
		if err := r.removeOwnerReferences(ctx, d.Identity, []types.UID{uid}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("orphaning %s: %w", d.Identity, err))
		}
	}
	if len(errs) > 0 {
		return reconcile.Result{}, utilerrors.NewAggregate(errs)
	}
	r.log.Info("dependents orphaned; removing the orphan finalizer", "object", info.Identity.String(), "dependents", len(info.Dependents))
	if err := r.removeFinalizer(ctx, info.Identity, metav1.FinalizerOrphanDependents); err != nil {
		return reconcile.Result{}, fmt.Errorf("%s: %w", info.Identity, err)
	}
	return reconcile.Result{}, nil
}

// ---- API operations ----

// resourceFor maps an apiVersion and kind to a resource and its scope.
func (r *run) resourceFor(apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	m, err := r.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, &restMappingError{kind: kind, version: apiVersion}
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// client is the metadata client for id's resource, in its namespace.
func (r *run) client(id Identity) (metadata.ResourceInterface, error) {
	gvr, namespaced, err := r.resourceFor(id.APIVersion, id.Kind)
	if err != nil {
		return nil, err
	}
	if !namespaced {
		return r.metadata.Resource(gvr), nil
	}
	if id.Namespace == "" {
		return nil, errNamespacedOwnerOfClusterScoped
	}
	return r.metadata.Resource(gvr).Namespace(id.Namespace), nil
}

func (r *run) getObject(ctx context.Context, id Identity) (*metav1.PartialObjectMetadata, error) {
	c, err := r.client(id)
	if err != nil {
		return nil, err
	}
	return c.Get(ctx, id.Name, metav1.GetOptions{})
}

// deleteObject deletes id (only that UID) with policy.
func (r *run) deleteObject(ctx context.Context, id Identity, policy metav1.DeletionPropagation) error {
	c, err := r.client(id)
	if err != nil {
		return err
	}
	uid := id.UID
	err = c.Delete(ctx, id.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) {
		return nil // the informer's delete event follows
	}
	return err
}

// patchMetadata reads id live and, if change alters its metadata, writes
// the result back with a JSON merge patch that carries the uid and
// resourceVersion read as preconditions; a conflict is retried with a
// fresh read. An object that is gone or replaced is left alone.
func (r *run) patchMetadata(ctx context.Context, id Identity, change func(m *metav1.PartialObjectMetadata) map[string]any) error {
	c, err := r.client(id)
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := c.Get(ctx, id.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if cur.UID != id.UID {
			return nil
		}
		fields := change(cur)
		if fields == nil {
			return nil
		}
		fields["uid"] = cur.UID
		fields["resourceVersion"] = cur.ResourceVersion
		patch, err := json.Marshal(map[string]any{"metadata": fields})
		if err != nil {
			return err
		}
		_, err = c.Patch(ctx, id.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// ownerReferencesField is a merge-patch value for metadata.ownerReferences.
func ownerReferencesField(refs []metav1.OwnerReference) any {
	if len(refs) == 0 {
		return nil // JSON null removes the field
	}
	return refs
}

// removeOwnerReferences drops the references to uids from id.
func (r *run) removeOwnerReferences(ctx context.Context, id Identity, uids []types.UID) error {
	return r.patchMetadata(ctx, id, func(m *metav1.PartialObjectMetadata) map[string]any {
		kept := slices.DeleteFunc(slices.Clone(m.OwnerReferences), func(ref metav1.OwnerReference) bool { return slices.Contains(uids, ref.UID) })
		if len(kept) == len(m.OwnerReferences) {
			return nil
		}
		return map[string]any{"ownerReferences": ownerReferencesField(kept)}
	})
}

// unblockOwnerReferences clears blockOwnerDeletion on id's references.
func (r *run) unblockOwnerReferences(ctx context.Context, id Identity) error {
	return r.patchMetadata(ctx, id, func(m *metav1.PartialObjectMetadata) map[string]any {
		refs := slices.Clone(m.OwnerReferences)
		changed := false
		for i := range refs {
			if refs[i].BlockOwnerDeletion != nil && *refs[i].BlockOwnerDeletion {
				f := false
				refs[i].BlockOwnerDeletion = &f
				changed = true
			}
		}
		if !changed {
			return nil
		}
		return map[string]any{"ownerReferences": ownerReferencesField(refs)}
	})
}

// removeFinalizer drops finalizer from id; the API server deletes an
// object with deletionTimestamp once its last finalizer is gone.
func (r *run) removeFinalizer(ctx context.Context, id Identity, finalizer string) error {
	return r.patchMetadata(ctx, id, func(m *metav1.PartialObjectMetadata) map[string]any {
		if !slices.Contains(m.Finalizers, finalizer) {
			return nil
		}
		kept := slices.DeleteFunc(slices.Clone(m.Finalizers), func(f string) bool { return f == finalizer })
		var v any
		if len(kept) > 0 {
			v = kept
		}
		return map[string]any{"finalizers": v}
	})
}

// ---- resource discovery ----

// deletableResources are the preferred versions of every resource that
// supports delete, list and watch, less the ignored ones. With a partial
// discovery failure it returns what it found and the error.
func (r *run) deletableResources() (map[schema.GroupVersionResource]schema.GroupVersionKind, error) {
	lists, err := discovery.ServerPreferredResources(r.discovery)
	out := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	for _, rl := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}, lists) {
		gv, perr := schema.ParseGroupVersion(rl.GroupVersion)
		if perr != nil {
			r.log.Info("ignoring invalid discovered resource", "groupVersion", rl.GroupVersion, "err", perr)
			continue
		}
		for _, res := range rl.APIResources {
			if strings.Contains(res.Name, "/") || r.Ignored[schema.GroupResource{Group: gv.Group, Resource: res.Name}] {
				continue
			}
			out[gv.WithResource(res.Name)] = gv.WithKind(res.Kind)
		}
	}
	return out, err
}
