package reconcile

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// SharedInformers is an informer factory shared by the components of one
// process (the controllers and the scheduler), so that each resource is
// listed, watched and held in memory once rather than once per component:
// with 10,000 pods, a copy of every pod per controller was most of the
// server's memory. Controllers take Pods and Nodes, the resources that grow
// with the cluster, from it (SharedOr) and keep their own informers for the
// rest, with their own resync periods.
//
// Its informers live as long as the context given to NewSharedInformers:
// Start ignores the channel a component passes, and Shutdown does nothing,
// so one component stopping (a controller restarted, leadership lost) never
// stops the informers of another. Objects in its caches carry no
// managedFields, which no controller or the scheduler reads.
//
// Objects from a shared cache must not be modified (DeepCopy first); a
// component that adds event handlers to a shared informer removes them
// when it stops (see AddHandler), and one that adds an indexer uses
// AddIndexer, which tolerates the index being there already.
type SharedInformers struct {
	informers.SharedInformerFactory
	client kubernetes.Interface
	stop   <-chan struct{}
}

// NewSharedInformers returns a factory over client whose informers run
// until ctx ends.
func NewSharedInformers(ctx context.Context, client kubernetes.Interface) *SharedInformers {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(dropManagedFields))
	return &SharedInformers{SharedInformerFactory: f, client: client, stop: ctx.Done()}
}

// Client is the client the informers list and watch with: in the server
// process, the controller manager's identity, as upstream's
// kube-controller-manager's informers are all made by the manager's own
// client (its role lists and watches everything) while each controller
// writes under its own ServiceAccount. A controller's own informers read
// with it too (controller.NewBuilder).
func (s *SharedInformers) Client() kubernetes.Interface { return s.client }

// Start starts the informers requested so far, for the factory's lifetime.
func (s *SharedInformers) Start(<-chan struct{}) { s.SharedInformerFactory.Start(s.stop) }

// Shutdown does nothing: the informers stop when the factory's context
// ends. Wait waits for that.
func (s *SharedInformers) Shutdown() {}

// Wait waits, once the factory's context has ended, until every informer
// has stopped.
func (s *SharedInformers) Wait() { s.SharedInformerFactory.Shutdown() }

// dropManagedFields is the transform of shared informers: managedFields is
// often the largest part of a small object's metadata, and only the API
// server uses it.
func dropManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// AddHandler adds h to inf and returns a function that removes it again:
// a component whose Run returns must not leave handlers on an informer it
// shares, or a restart would register them twice.
func AddHandler(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) (remove func(), err error) {
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return nil, err
	}
	return func() { _ = inf.RemoveEventHandler(reg) }, nil
}

// AddIndexer adds the index name to inf unless inf has an index of that
// name already (another component sharing the informer added it, or this
// one did before a restart). Components sharing an informer must give the
// same name to the same index function.
func AddIndexer(inf cache.SharedIndexInformer, name string, f cache.IndexFunc) error {
	has := func() bool { _, ok := inf.GetIndexer().GetIndexers()[name]; return ok }
	if has() {
		return nil
	}
	if err := inf.AddIndexers(cache.Indexers{name: f}); err != nil && !has() {
		return err
	}
	return nil
}

// SharedOr returns shared if it is set, else own: the factory a
// controller takes its Pod and Node informers from.
func SharedOr(shared *SharedInformers, own informers.SharedInformerFactory) informers.SharedInformerFactory {
	if shared != nil {
		return shared
	}
	return own
}

// WaitForSync waits for a controller's informers. When they did not sync
// it says so with ok false, and err is nil if ctx ended (Run returns
// quietly), else an error naming what failed to sync.
func WaitForSync(ctx context.Context, what string, synced ...cache.InformerSynced) (ok bool, err error) {
	if WaitForCacheSync(ctx, synced...) {
		return true, nil
	}
	if ctx.Err() != nil {
		return false, nil
	}
	return false, fmt.Errorf("%s did not sync", what)
}

// The intervals WaitForCacheSync checks at: every 2 ms for its first
// second (an informer of a local API server lists in a few milliseconds),
// every 100 ms after.
const (
	fastSyncPoll   = 2 * time.Millisecond
	fastSyncPeriod = time.Second
	slowSyncPoll   = 100 * time.Millisecond
)

// WaitForCacheSync waits until every synced says so (true), or ctx ends
// (false). client-go's cache.WaitForCacheSync looks every 100 ms: a tenth
// of a second lost on every start whose informers were not synced at the
// first look, which plainkube's components and tests start many of.
func WaitForCacheSync(ctx context.Context, synced ...cache.InformerSynced) bool {
	start := time.Now()
	for {
		if allSynced(synced) {
			return true
		}
		interval := fastSyncPoll
		if time.Since(start) > fastSyncPeriod {
			interval = slowSyncPoll
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(interval):
		}
	}
}

func allSynced(synced []cache.InformerSynced) bool {
	for _, s := range synced {
		if !s() {
			return false
		}
	}
	return true
}
