package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"plainkube.dev/plainkube/internal/reconcile"
)

// finalizerEstimateSeconds is how long to wait, by default, for objects
// that still have finalizers.
const finalizerEstimateSeconds int64 = 15

// deleter empties namespaces through the API.
type deleter struct {
	client    kubernetes.Interface
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	now       func() time.Time
	log       *slog.Logger
	// finalizerToken is the spec.finalizers entry this deleter removes.
	finalizerToken corev1.FinalizerName
	ops            *opCache
	// finalizerEstimate is how many seconds to allow objects that still
	// have finalizers (finalizerEstimateSeconds; tests shorten it).
	finalizerEstimate int64
}

// apply carries out a namespace's Plan: status.phase Terminating, then
// (unless it is finalized already) everything in it deleted and, once
// nothing remains, its finalizer token removed. Content still going away
// makes it look again after the plan's wait.
func (d *deleter) apply(ctx context.Context, st State, p Plan) (reconcile.Result, error) {
	if p.Skip {
		return reconcile.Result{}, nil
	}
	ns := st.Namespace
	started := d.now()
	if p.MarkTerminating {
		var err error
		ns, err = d.retryOnConflict(ctx, ns, d.markTerminating)
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, failed(st.Namespace, err)
		}
	}
	if p.Finalized {
		return reconcile.Result{}, nil
	}
	estimate, err := d.deleteAllContent(ctx, ns)
	if err != nil {
		return reconcile.Result{}, failed(st.Namespace, err)
	}
	if estimate > 0 {
		wait := contentWait(estimate)
		d.log.Info("content remaining in namespace", "namespace", ns.Name, "waitSeconds", wait.Seconds())
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if _, err := d.retryOnConflict(ctx, ns, d.finalize); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, failed(st.Namespace, err)
	}
	d.log.Debug("namespace synced", "namespace", ns.Name, "took", d.now().Sub(started))
	return reconcile.Result{}, nil
}

func failed(ns *corev1.Namespace, err error) error {
	return fmt.Errorf("deleting content of namespace %s: %w", ns.Name, err)
}

// retryOnConflict runs fn, and on a conflict again with a fresh read (of
// the same namespace: a changed UID is an error).
func (d *deleter) retryOnConflict(ctx context.Context, ns *corev1.Namespace, fn func(context.Context, *corev1.Namespace) (*corev1.Namespace, error)) (*corev1.Namespace, error) {
	for attempt := 0; ; attempt++ {
		out, err := fn(ctx, ns)
		if err == nil || !apierrors.IsConflict(err) || attempt >= 10 {
			return out, err
		}
		latest, err := d.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if latest.UID != ns.UID {
			return nil, fmt.Errorf("namespace uid has changed across retries")
		}
		ns = latest
	}
}

// markTerminating sets status.phase Terminating if it is not.
func (d *deleter) markTerminating(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	if ns.DeletionTimestamp == nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return ns, nil
	}
	ns = ns.DeepCopy()
	ns.Status.Phase = corev1.NamespaceTerminating
	return d.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})
}

// finalize removes the token from spec.finalizers.
func (d *deleter) finalize(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	if !slices.Contains(ns.Spec.Finalizers, d.finalizerToken) {
		return ns, nil
	}
	ns = ns.DeepCopy()
	ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == d.finalizerToken })
	if ns.Spec.Finalizers == nil {
		ns.Spec.Finalizers = []corev1.FinalizerName{}
	}
	return d.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
}

// gvrDeletion is what one resource's pass left behind.
type gvrDeletion struct {
	// estimate is how many seconds the remaining content should take.
	estimate             int64
	remaining            int
	remainingByFinalizer map[string]int
}

// deleteAllContent deletes every namespaced resource in ns, records the
// outcome in its conditions, and returns an estimate of the seconds until
// what remains is gone.
func (d *deleter) deleteAllContent(ctx context.Context, ns *corev1.Namespace) (int64, error) {
	var errs []error
	cu := &conditionUpdater{now: metav1.NewTime(d.now())}

	resources, err := discovery.ServerPreferredNamespacedResources(d.discovery)
	if err != nil {
		// Not fatal: work with the resources that were discovered.
		errs = append(errs, err)
		cu.discoveryErr(err)
	}
	deletable := discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete"}}, resources)
	gvrs, err := discovery.GroupVersionResources(deletable)
	if err != nil {
		errs = append(errs, err)
		cu.groupVersionErr(err)
	}
	d.ops.learn(deletable)

	ordered := make([]schema.GroupVersionResource, 0, len(gvrs))
	for gvr := range gvrs {
		ordered = append(ordered, gvr)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].String() < ordered[j].String() })

	// Pods go first, and the rest only once they are gone (upstream's
	// OrderedNamespaceDeletion): a pod keeps its ConfigMaps, Secrets and
	// claims while it shuts down.
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	if i := slices.Index(ordered, pods); i > 0 {
		ordered = append(append([]schema.GroupVersionResource{pods}, ordered[:i]...), ordered[i+1:]...)
	}

	var estimate int64
	totals := contentTotals{remainingByResource: map[schema.GroupVersionResource]int{}, remainingByFinalizer: map[string]int{}}
	for _, gvr := range ordered {
		if gvr != pods && totals.remainingByResource[pods] > 0 {
			break
		}
		res, err := d.deleteAllContentFor(ctx, gvr, ns.Name, ns.DeletionTimestamp.Time)
		if err != nil {
			errs = append(errs, err)
			cu.contentErr(err)
		}
		estimate = max(estimate, res.estimate)
		if res.remaining > 0 {
			totals.remainingByResource[gvr] = res.remaining
			for f, n := range res.remainingByFinalizer {
				if n > 0 {
					totals.remainingByFinalizer[f] += n
				}
			}
		}
	}
	cu.contentTotals(totals)

	// Always write the conditions: a pass that went well replaces the
	// failures a previous one recorded.
	if cu.update(&ns.Status) {
		if updated, err := d.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{}); err == nil {
			*ns = *updated
		} else if !apierrors.IsNotFound(err) {
			// Not fatal, as upstream: the next pass writes them again.
			d.log.Warn("couldn't update status conditions", "namespace", ns.Name, "err", err)
		}
	}
	return estimate, utilerrors.NewAggregate(errs)
}

// deleteAllContentFor deletes gvr's objects in ns and counts what remains.
func (d *deleter) deleteAllContentFor(ctx context.Context, gvr schema.GroupVersionResource, ns string, deletedAt time.Time) (gvrDeletion, error) {
	estimate, err := d.estimateGracefulTermination(ctx, gvr, ns, deletedAt)
	if err != nil {
		return gvrDeletion{}, err
	}
	supported, err := d.deleteCollection(ctx, gvr, ns)
	if err != nil {
		return gvrDeletion{estimate: estimate}, err
	}
	if !supported {
		if err := d.deleteEachItem(ctx, gvr, ns); err != nil {
			return gvrDeletion{estimate: estimate}, err
		}
	}
	list, listed, err := d.listCollection(ctx, gvr, ns)
	if err != nil {
		return gvrDeletion{estimate: estimate}, err
	}
	if !listed || len(list.Items) == 0 {
		return gvrDeletion{estimate: estimate}, nil
	}
	byFinalizer := map[string]int{}
	for _, item := range list.Items {
		for _, f := range item.Finalizers {
			byFinalizer[f]++
		}
	}
	out := gvrDeletion{estimate: estimate, remaining: len(list.Items), remainingByFinalizer: byFinalizer}
	if estimate != 0 {
		return out, nil
	}
	if len(byFinalizer) > 0 {
		// Finalizers are a normal reason to linger: give them time.
		out.estimate = d.finalizerEstimate
		return out, nil
	}
	// Nothing explains what remains.
	return out, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", ns, gvr)
}

// estimateGracefulTermination is the longest grace period of the pods in
// ns that are not finished, or 0 once that long has passed since the
// namespace's deletion.
func (d *deleter) estimateGracefulTermination(ctx context.Context, gvr schema.GroupVersionResource, ns string, deletedAt time.Time) (int64, error) {
	if gvr.GroupResource() != (schema.GroupResource{Resource: "pods"}) {
		return 0, nil
	}
	pods, err := d.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	var estimate int64
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil && *g > estimate {
			estimate = *g
		}
	}
	if d.now().Sub(deletedAt) >= time.Duration(estimate)*time.Second {
		return 0, nil
	}
	return estimate, nil
}

// deleteCollection deletes gvr's objects in ns with one deletecollection,
// reporting false if the resource does not support it.
func (d *deleter) deleteCollection(ctx context.Context, gvr schema.GroupVersionResource, ns string) (bool, error) {
	key := opKey{op: "deletecollection", gvr: gvr}
	if !d.ops.supported(key) {
		return false, nil
	}
	background := metav1.DeletePropagationBackground
	err := d.metadata.Resource(gvr).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
	if err == nil {
		return true, nil
	}
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		d.ops.setUnsupported(key)
		return false, nil
	}
	return true, err
}

// listCollection lists gvr's objects in ns, reporting false if the
// resource does not support list.
func (d *deleter) listCollection(ctx context.Context, gvr schema.GroupVersionResource, ns string) (*metav1.PartialObjectMetadataList, bool, error) {
	key := opKey{op: "list", gvr: gvr}
	if !d.ops.supported(key) {
		return nil, false, nil
	}
	list, err := d.metadata.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		return list, true, nil
	}
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		d.ops.setUnsupported(key)
		return nil, false, nil
	}
	return nil, true, err
}

// deleteEachItem lists gvr's objects in ns and deletes them one by one.
func (d *deleter) deleteEachItem(ctx context.Context, gvr schema.GroupVersionResource, ns string) error {
	list, listed, err := d.listCollection(ctx, gvr, ns)
	if err != nil || !listed {
		return err
	}
	background := metav1.DeletePropagationBackground
	for _, item := range list.Items {
		err := d.metadata.Resource(gvr).Namespace(ns).Delete(ctx, item.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			return err
		}
	}
	return nil
}

// opKey names one operation on one resource.
type opKey struct {
	op  string // "list" or "deletecollection"
	gvr schema.GroupVersionResource
}

// opCache remembers operations a resource does not support, from the
// verbs discovery lists and from 405/404 answers.
type opCache struct {
	mu          sync.RWMutex
	unsupported map[opKey]bool
}

func newOpCache() *opCache { return &opCache{unsupported: map[opKey]bool{}} }

func (c *opCache) supported(k opKey) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return !c.unsupported[k]
}

func (c *opCache) setUnsupported(k opKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unsupported[k] = true
}

// learn records, from discovery, which resources lack list or
// deletecollection.
func (c *opCache) learn(lists []*metav1.APIResourceList) {
	for _, rl := range lists {
		gv, err := schema.ParseGroupVersion(rl.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range rl.APIResources {
			for _, op := range []string{"list", "deletecollection"} {
				if !slices.Contains(r.Verbs, op) {
					c.setUnsupported(opKey{op: op, gvr: gv.WithResource(r.Name)})
				}
			}
		}
	}
}
