package daemonset

import (
	"context"
	"sort"
	"sync"
	"time"

	"plainkube.dev/plainkube/internal/api/podutil"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/controller/history"
	"plainkube.dev/plainkube/internal/reconcile"
)

var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

func (c *Controller) syncDaemonSet(ctx context.Context, key string) (reconcile.Result, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return reconcile.Result{}, nil
	}
	ds, err := c.dsLister.DaemonSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.exp.Forget(key)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || sel.Empty() {
		c.log.Error("invalid selector; not syncing", "namespace", namespace, "name", name)
		return reconcile.Result{}, nil
	}
	all, err := c.podLister.Pods(namespace).List(labels.Everything())
	if err != nil {
		return reconcile.Result{}, err
	}
	satisfied := c.exp.Satisfied(key)
	if ds.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	hash, err := c.syncRevisions(ctx, ds)
	if err != nil {
		return reconcile.Result{}, err
	}
	pods, err := c.claimPods(ctx, ds, sel, all)
	if err != nil {
		return reconcile.Result{}, err
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return reconcile.Result{}, err
	}
	p := plan(State{DaemonSet: ds, Hash: hash, Pods: pods, Nodes: nodes, Satisfied: satisfied, Now: c.now()})
	var manageErr error
	if p.Manage {
		manageErr = c.manage(ctx, ds, key, hash, p.Delete, p.Create)
	}
	res := reconcile.Result{RequeueAfter: p.RequeueAfter}
	if err := c.writeStatus(ctx, ds, p, hash); err != nil {
		return res, err
	}
	return res, manageErr
}

// manage creates a pod on each of the create nodes and deletes the del
// pods, at most BurstReplicas of each, having first expected them all (so
// that the informer's events for them, however early, are counted).
func (c *Controller) manage(ctx context.Context, ds *appsv1.DaemonSet, key, hash string, del []*corev1.Pod, create []string) error {
	if len(create) > BurstReplicas {
		create = create[:BurstReplicas]
	}
	if len(del) > BurstReplicas {
		del = del[:BurstReplicas]
	}
	c.exp.Expect(key, len(create), controller.ObjectKeys(del))
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, node := range create {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod := NewPod(ds, node, hash)
			out, err := c.Client.CoreV1().Pods(ds.Namespace).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					// Every create will fail; as upstream, the expectation
					// stays until the DaemonSet goes (or it expires).
					return
				}
				// It will not be seen.
				c.exp.CreationObserved(key)
				mu.Lock()
				defer mu.Unlock()
				c.rec.Eventf(ds, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
				errs = append(errs, err)
				return
			}
			c.log.Debug("created daemon pod", "namespace", ds.Namespace, "name", ds.Name, "pod", out.Name, "node", node)
			c.rec.Eventf(ds, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", out.Name)
		}()
	}
	for _, p := range del {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
			if err != nil {
				// Its deletion will not be seen (gone already, or replaced
				// by another pod of the same name).
				c.exp.DeletionObserved(key, controller.ObjectKey(p))
				if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				c.rec.Eventf(ds, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
				errs = append(errs, err)
				return
			}
			c.log.Debug("deleted daemon pod", "namespace", ds.Namespace, "name", ds.Name, "pod", p.Name)
			c.rec.Eventf(ds, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
		}()
	}
	wg.Wait()
	return utilerrors.NewAggregate(errs)
}

// NewPod is the daemon pod of ds for node: the template with the revision
// hash and template generation labels, the default tolerations, pinned to
// node by node affinity, controlled by ds.
func NewPod(ds *appsv1.DaemonSet, node, hash string) *corev1.Pod {
	t := ds.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ds.Name + "-",
			Namespace:       ds.Namespace,
			Labels:          map[string]string{},
			Annotations:     t.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Spec: t.Spec,
	}
	for k, v := range t.Labels {
		pod.Labels[k] = v
	}
	pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	if g := ds.Annotations[appsv1.DeprecatedTemplateGeneration]; g != "" {
		pod.Labels[TemplateGenerationLabel] = g
	}
	AddDefaultTolerations(&pod.Spec)
	PinToNode(&pod.Spec, node)
	return pod
}

// claimPods adopts and releases pods per controller.DecideClaim and returns
// those ds controls.
func (c *Controller) claimPods(ctx context.Context, ds *appsv1.DaemonSet, sel labels.Selector, all []*corev1.Pod) ([]*corev1.Pod, error) {
	return controller.PodClaimer{
		Pods: c.Client.CoreV1(), Owner: ds, Kind: controllerKind, Selector: sel,
		Recheck: func(ctx context.Context) bool {
			fresh, err := c.Client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
			return err == nil && fresh.UID == ds.UID && fresh.DeletionTimestamp == nil
		},
	}.Claim(ctx, all)
}

// syncRevisions makes sure a ControllerRevision holds ds's template and
// returns its hash; it trims old revisions no pod uses.
func (c *Controller) syncRevisions(ctx context.Context, ds *appsv1.DaemonSet) (string, error) {
	data, err := history.RevisionData(&ds.Spec.Template)
	if err != nil {
		return "", err
	}
	sel, _ := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	all, err := c.revisions.ControllerRevisions(ds.Namespace).List(sel)
	if err != nil {
		return "", err
	}
	var revs []*appsv1.ControllerRevision
	for _, r := range all {
		if metav1.IsControlledBy(r, ds) {
			revs = append(revs, r)
		}
	}
	maxRev := history.MaxRevision(revs)
	var cur *appsv1.ControllerRevision
	for _, r := range revs {
		if history.SameRevisionData(r.Data.Raw, data) {
			cur = r
			break
		}
	}
	if cur != nil && cur.Revision < maxRev {
		// Rolled back to an older template: it becomes the newest revision.
		upd := cur.DeepCopy()
		upd.Revision = maxRev + 1
		if cur, err = c.Client.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return "", err
		}
	}
	if cur == nil {
		collision := ds.Status.CollisionCount
		for {
			hash := history.HashRevision(data, collision)
			lbls := map[string]string{}
			for k, v := range ds.Spec.Template.Labels {
				lbls[k] = v
			}
			lbls[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
			rev := &appsv1.ControllerRevision{
				ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + hash, Namespace: ds.Namespace, Labels: lbls,
					Annotations:     ds.Annotations,
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)}},
				Data:     runtime.RawExtension{Raw: data},
				Revision: maxRev + 1,
			}
			cur, err = c.Client.AppsV1().ControllerRevisions(ds.Namespace).Create(ctx, rev, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				existing, gerr := c.Client.AppsV1().ControllerRevisions(ds.Namespace).Get(ctx, rev.Name, metav1.GetOptions{})
				if gerr != nil {
					return "", gerr
				}
				if metav1.IsControlledBy(existing, ds) && history.SameRevisionData(existing.Data.Raw, data) {
					cur = existing
					break
				}
				// A hash collision: count it in the status and try the next name.
				n := int32(0)
				if collision != nil {
					n = *collision
				}
				n++
				collision = &n
				upd := ds.DeepCopy()
				upd.Status.CollisionCount = collision
				if _, err := c.Client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
					return "", err
				}
				continue
			}
			if err != nil {
				return "", err
			}
			revs = append(revs, cur)
			break
		}
	}
	hash := cur.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	if hash == "" {
		hash = history.HashRevision(data, ds.Status.CollisionCount)
	}
	c.truncateHistory(ctx, ds, revs, cur)
	return hash, nil
}

func (c *Controller) truncateHistory(ctx context.Context, ds *appsv1.DaemonSet, revs []*appsv1.ControllerRevision, cur *appsv1.ControllerRevision) {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	sel, _ := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	pods, _ := c.podLister.Pods(ds.Namespace).List(sel)
	used := map[string]bool{}
	for _, p := range pods {
		used[p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] = true
	}
	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if r.Name != cur.Name && !used[r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			old = append(old, r)
		}
	}
	if len(old) <= limit {
		return
	}
	sort.Slice(old, func(i, j int) bool { return old[i].Revision < old[j].Revision })
	for _, r := range old[:len(old)-limit] {
		if err := c.Client.AppsV1().ControllerRevisions(ds.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			c.log.Warn("deleting old revision", "namespace", ds.Namespace, "name", ds.Name, "revision", r.Name, "err", err)
		}
	}
}

// Status is the status ds should have given nodes, whether the daemon
// should run on each, and its pods by target node.
func Status(ds *appsv1.DaemonSet, nodes []*corev1.Node, runs map[string]bool, byNode map[string][]*corev1.Pod, hash string, now time.Time) appsv1.DaemonSetStatus {
	st := appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, CollisionCount: ds.Status.CollisionCount,
		Conditions: ds.Status.Conditions}
	for _, node := range nodes {
		var live []*corev1.Pod
		for _, p := range byNode[node.Name] {
			if p.DeletionTimestamp == nil {
				live = append(live, p)
			}
		}
		if !runs[node.Name] {
			if len(live) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(live) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		sortOldestFirst(live)
		// The oldest pod counts; an updated pod counts for "updated".
		pod := live[0]
		for _, p := range live {
			if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
				st.UpdatedNumberScheduled++
				if IsAvailable(p, ds.Spec.MinReadySeconds, now) {
					pod = p
				}
				break
			}
		}
		if podutil.IsReady(pod) {
			st.NumberReady++
			if IsAvailable(pod, ds.Spec.MinReadySeconds, now) {
				st.NumberAvailable++
			}
		}
	}
	st.NumberUnavailable = max(st.DesiredNumberScheduled-st.NumberAvailable, 0)
	return st
}

// writeStatus writes the status p's nodes and pods give; a DaemonSet whose
// pods were not managed (expectations unmet) keeps its observedGeneration,
// as upstream: that generation was not acted on.
func (c *Controller) writeStatus(ctx context.Context, ds *appsv1.DaemonSet, p Plan, hash string) error {
	st := Status(ds, p.Nodes, p.Runs, p.ByNode, hash, c.now())
	if !p.Manage {
		st.ObservedGeneration = ds.Status.ObservedGeneration
	}
	if equalStatus(ds.Status, st) {
		return nil
	}
	upd := ds.DeepCopy()
	upd.Status = st
	_, err := c.Client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	return err
}

func equalStatus(a, b appsv1.DaemonSetStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.DesiredNumberScheduled == b.DesiredNumberScheduled &&
		a.CurrentNumberScheduled == b.CurrentNumberScheduled && a.NumberMisscheduled == b.NumberMisscheduled &&
		a.NumberReady == b.NumberReady && a.NumberAvailable == b.NumberAvailable &&
		a.NumberUnavailable == b.NumberUnavailable && a.UpdatedNumberScheduled == b.UpdatedNumberScheduled
}

// TemplateGenerationLabel is the pod label upstream sets to the template generation.
const TemplateGenerationLabel = "pod-template-generation"
