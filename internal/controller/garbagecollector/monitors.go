package garbagecollector

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"plainkube.dev/plainkube/internal/reconcile"
)

// monitor is one resource's metadata-only informer.
type monitor struct {
	gvk      schema.GroupVersionKind
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
}

// syncMonitors reads discovery and starts an informer for each deletable
// resource that has none, and stops those whose resource is gone (but not
// those of a group/version that discovery failed to list this time).
func (r *run) syncMonitors(ctx context.Context) error {
	resources, err := r.deletableResources()
	failed, _ := discovery.GroupDiscoveryFailedErrorGroups(err)
	if err != nil && len(resources) == 0 {
		return err
	}
	r.monitorsMu.Lock()
	defer r.monitorsMu.Unlock()
	added, removed := 0, 0
	for gvr, gvk := range resources {
		if m, ok := r.monitors[gvr]; ok && m.gvk == gvk {
			continue
		} else if ok {
			m.cancel()
		}
		r.monitors[gvr] = r.startMonitor(ctx, gvr, gvk)
		added++
	}
	for gvr, m := range r.monitors {
		if _, ok := resources[gvr]; ok {
			continue
		}
		if _, ok := failed[gvr.GroupVersion()]; ok {
			continue
		}
		m.cancel()
		delete(r.monitors, gvr)
		removed++
	}
	if added > 0 || removed > 0 {
		r.log.Info("resource monitors changed", "added", added, "removed", removed, "total", len(r.monitors))
	}
	return err
}

func (r *run) startMonitor(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) *monitor {
	inf := metadatainformer.NewFilteredMetadataInformer(r.metadata, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	// The graph needs identity, owners and finalizers only.
	_ = inf.SetTransform(func(obj any) (any, error) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			m.ManagedFields, m.Annotations, m.Labels = nil, nil, nil
		}
		return obj, nil
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.observe(Upsert, gvk, obj) },
		UpdateFunc: func(_, obj any) { r.observe(Upsert, gvk, obj) },
		DeleteFunc: func(obj any) {
			obj, _ = reconcile.DeletedObject[any](obj)
			r.observe(Delete, gvk, obj)
		},
	})
	mctx, cancel := context.WithCancel(ctx)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		inf.RunWithContext(mctx)
	}()
	return &monitor{gvk: gvk, informer: inf, cancel: cancel}
}

// observe turns an informer notification into a graph event.
func (r *run) observe(t EventType, gvk schema.GroupVersionKind, obj any) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	r.addGraphChange(&Event{
		Type: t,
		Object: Identity{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
			Namespace: m.Namespace, Name: m.Name, UID: m.UID},
		Owners:       m.OwnerReferences,
		Finalizers:   m.Finalizers,
		BeingDeleted: m.DeletionTimestamp != nil,
	})
}

func (r *run) monitorCount() int {
	r.monitorsMu.Lock()
	defer r.monitorsMu.Unlock()
	return len(r.monitors)
}

// waitForSync waits until every informer has listed and the graph has
// taken in what they delivered, or timeout passes.
func (r *run) waitForSync(ctx context.Context, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if r.synced() && r.pendingChanges.Load() == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

func (r *run) synced() bool {
	r.monitorsMu.Lock()
	defer r.monitorsMu.Unlock()
	for _, m := range r.monitors {
		if !m.informer.HasSynced() {
			return false
		}
	}
	return true
}

// stopMonitors stops every informer and waits for them.
func (r *run) stopMonitors() {
	r.monitorsMu.Lock()
	for _, m := range r.monitors {
		m.cancel()
	}
	r.monitors = map[schema.GroupVersionResource]*monitor{}
	r.monitorsMu.Unlock()
	r.wg.Wait()
}
