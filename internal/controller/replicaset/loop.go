package replicaset

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"plainkube.dev/plainkube/internal/api/podutil"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// loop reconciles the workloads of one kind.
type loop struct {
	kind   kind
	gvk    schema.GroupVersionKind
	client kubernetes.Interface
	pods   corelisters.PodLister
	queue  workqueue.TypedRateLimitingInterface[string]
	exp    *controller.Expectations
	rec    record.EventRecorder
	log    *slog.Logger
	burst  int
	now    func() time.Time
}

// ---- informer events ----

func (l *loop) enqueue(w *workload) { l.queue.Add(w.key()) }

func (l *loop) addWorkload(obj any) {
	if w, ok := l.kind.fromObject(obj); ok {
		l.enqueue(w)
	}
}

func (l *loop) updateWorkload(oldObj, curObj any) {
	old, ok1 := l.kind.fromObject(oldObj)
	cur, ok2 := l.kind.fromObject(curObj)
	if !ok1 || !ok2 {
		return
	}
	if old.obj.GetUID() != cur.obj.GetUID() {
		// Deleted and recreated under the same name between two events.
		l.deleteWorkload(oldObj)
	}
	l.enqueue(cur)
}

func (l *loop) deleteWorkload(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	w, ok := l.kind.fromObject(obj)
	if !ok {
		return
	}
	l.exp.Forget(w.key())
	l.enqueue(w)
}

func (l *loop) addPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen for the first time already being deleted (after a relist):
		// count it as a deletion, not a creation.
		l.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if w := l.resolveControllerRef(pod.Namespace, ref); w != nil {
			l.exp.CreationObserved(w.key())
			l.enqueue(w)
		}
		return
	}
	// An orphan: wake whoever might adopt it.
	for _, w := range l.workloadsForPod(pod) {
		l.enqueue(w)
	}
}

func (l *loop) updatePod(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if !ok1 || !ok2 || cur.ResourceVersion == old.ResourceVersion {
		return
	}
	labelChanged := !reflect.DeepEqual(cur.Labels, old.Labels)
	if cur.DeletionTimestamp != nil {
		// A graceful deletion started: replace the pod now rather than when
		// it is finally removed.
		l.deletePod(cur)
		if labelChanged {
			l.deletePod(old)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if w := l.resolveControllerRef(old.Namespace, oldRef); w != nil {
			l.enqueue(w)
		}
	}
	if curRef != nil {
		w := l.resolveControllerRef(cur.Namespace, curRef)
		if w == nil {
			return
		}
		l.enqueue(w)
		if !podutil.IsReady(old) && podutil.IsReady(cur) && w.minReadySeconds > 0 {
			// Look again when the pod becomes available (a second late, so
			// as not to be early).
			l.queue.AddAfter(w.key(), time.Duration(w.minReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if labelChanged || refChanged {
		for _, w := range l.workloadsForPod(cur) {
			l.enqueue(w)
		}
	}
}

func (l *loop) deletePod(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return
	}
	if w := l.resolveControllerRef(pod.Namespace, ref); w != nil {
		l.exp.DeletionObserved(w.key(), podKey(pod))
		l.enqueue(w)
	}
}

// resolveControllerRef is the workload ref names, if it is of this kind and
// still the same object.
func (l *loop) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *workload {
	if ref.Kind != l.gvk.Kind {
		return nil
	}
	w, err := l.kind.get(namespace, ref.Name)
	if err != nil || w.obj.GetUID() != ref.UID {
		return nil
	}
	return w
}

// workloadsForPod are the workloads whose selector matches pod.
func (l *loop) workloadsForPod(pod *corev1.Pod) []*workload {
	if len(pod.Labels) == 0 {
		return nil
	}
	all, err := l.kind.list(pod.Namespace)
	if err != nil {
		return nil
	}
	var out []*workload
	for _, w := range all {
		if w.selector == nil || w.selector.Empty() || !w.selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// ---- reconcile ----

// sync reconciles the workload named by key. A status write that lost a
// race (the informer cache was behind) is retried with backoff without
// being reported as a failure.
func (l *loop) sync(ctx context.Context, key string) (reconcile.Result, error) {
	res, err := l.syncWorkload(ctx, key)
	if apierrors.IsConflict(err) {
		l.log.Debug("conflict; will retry", "key", key, "err", err)
		return reconcile.Result{Requeue: true}, nil
	}
	return res, err
}

func (l *loop) syncWorkload(ctx context.Context, key string) (reconcile.Result, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return reconcile.Result{}, nil
	}
	w, err := l.kind.get(namespace, name)
	if apierrors.IsNotFound(err) {
		l.exp.Forget(key)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if w.selector == nil {
		l.log.Error("invalid selector; not syncing", "namespace", namespace, "name", name)
		return reconcile.Result{}, nil
	}
	needsSync := l.exp.Satisfied(key)
	all, err := l.pods.Pods(namespace).List(labels.Everything())
	if err != nil {
		return reconcile.Result{}, err
	}
	var active []*corev1.Pod
	for _, p := range all {
		if podutil.IsActive(p) {
			active = append(active, p)
		}
	}
	active, err = l.claimPods(ctx, w, active)
	if err != nil {
		return reconcile.Result{}, err
	}
	var terminating []*corev1.Pod
	if l.kind.tracksTerminating() {
		for _, p := range all {
			if podutil.IsTerminating(p) && metav1.IsControlledBy(p, w.obj) && w.selector.Matches(labels.Set(p.Labels)) {
				terminating = append(terminating, p)
			}
		}
	}
	var manageErr error
	if needsSync && w.obj.GetDeletionTimestamp() == nil {
		manageErr = l.manageReplicas(ctx, active, w)
	}
	st := calculateStatus(w, active, terminating, l.kind.tracksTerminating(), manageErr, l.now())
	updated, err := l.writeStatus(ctx, w, st)
	if err != nil {
		return reconcile.Result{}, err
	}
	var res reconcile.Result
	if manageErr == nil && updated.minReadySeconds > 0 && updated.status.ReadyReplicas == updated.replicas &&
		updated.status.AvailableReplicas != updated.replicas {
		// Ready pods become available after minReadySeconds: look then.
		res.RequeueAfter = time.Duration(updated.minReadySeconds) * time.Second
	}
	return res, manageErr
}

// writeStatus writes st unless it changes nothing, retrying once on a
// fresh copy after a failed write.
func (l *loop) writeStatus(ctx context.Context, w *workload, st status) (*workload, error) {
	if statusUnchanged(w, st) {
		return w, nil
	}
	st.ObservedGeneration = w.obj.GetGeneration()
	for i := 0; ; i++ {
		updated, err := l.kind.updateStatus(ctx, w, st)
		if err == nil {
			return updated, nil
		}
		if i >= 1 {
			return nil, err
		}
		if w, err = l.kind.getLive(ctx, w.obj.GetNamespace(), w.obj.GetName()); err != nil {
			return nil, err
		}
	}
}

// claimPods adopts and releases pods as decideClaim says and returns the
// pods w controls and matches.
func (l *loop) claimPods(ctx context.Context, w *workload, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	var claimed []*corev1.Pod
	var errs []error
	checked := false
	var adoptErr error
	canAdopt := func() error {
		if checked {
			return adoptErr
		}
		checked = true
		// The cache may be stale: adopt only if the live object is the same
		// one and not being deleted.
		fresh, err := l.kind.getLive(ctx, w.obj.GetNamespace(), w.obj.GetName())
		switch {
		case err != nil:
			adoptErr = err
		case fresh.obj.GetUID() != w.obj.GetUID():
			adoptErr = fmt.Errorf("original %s/%s is gone: got uid %s, wanted %s",
				w.obj.GetNamespace(), w.obj.GetName(), fresh.obj.GetUID(), w.obj.GetUID())
		case fresh.obj.GetDeletionTimestamp() != nil:
			adoptErr = fmt.Errorf("%s/%s has just been deleted at %v",
				w.obj.GetNamespace(), w.obj.GetName(), fresh.obj.GetDeletionTimestamp())
		}
		return adoptErr
	}
	for _, p := range pods {
		switch controller.DecideClaim(w.obj, p, w.selector.Matches(labels.Set(p.Labels))) {
		case controller.KeepObject:
			claimed = append(claimed, p)
		case controller.AdoptObject:
			if err := canAdopt(); err != nil {
				errs = append(errs, fmt.Errorf("can't adopt Pod %s/%s (%s): %w", p.Namespace, p.Name, p.UID, err))
				continue
			}
			_, err := l.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType,
				controller.AdoptPatch(l.gvk, w.obj, p.UID), metav1.PatchOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			l.log.Debug("adopted pod", "namespace", p.Namespace, "name", w.obj.GetName(), "pod", p.Name)
			claimed = append(claimed, p)
		case controller.ReleaseObject:
			_, err := l.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType,
				controller.ReleasePatch(w.obj.GetUID(), p.UID), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
				errs = append(errs, err)
				continue
			}
			l.log.Debug("released pod", "namespace", p.Namespace, "name", w.obj.GetName(), "pod", p.Name)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

// manageReplicas creates or deletes the difference between active and the
// wanted number of replicas, at most burst at a time.
func (l *loop) manageReplicas(ctx context.Context, active []*corev1.Pod, w *workload) error {
	diff := len(active) - int(w.replicas)
	key := w.key()
	switch {
	case diff < 0:
		n := min(-diff, l.burst)
		// Expect the creates before making them, so that the informer's
		// events for them are counted.
		l.exp.ExpectCreations(key, n)
		ref := metav1.NewControllerRef(w.obj, l.gvk)
		done, _, err := controller.SlowStart(n, func(int) error {
			err := l.createPod(ctx, w, ref)
			if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				// Every create will fail; nothing to report.
				return nil
			}
			return err
		})
		// Creates never made (or failed) will not be seen.
		for range n - done {
			l.exp.CreationObserved(key)
		}
		return err
	case diff > 0:
		n := min(diff, l.burst)
		related, err := l.relatedPods(w)
		if err != nil {
			return err
		}
		victims := podsToDelete(active, related, n, l.now())
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = podKey(p)
		}
		l.exp.ExpectDeletions(key, keys)
		errs := make(chan error, len(victims))
		var wg sync.WaitGroup
		for _, p := range victims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := l.deletePodAPI(ctx, w, p); err != nil {
					// Its deletion will not be seen.
					l.exp.DeletionObserved(key, podKey(p))
					if !apierrors.IsNotFound(err) {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		select {
		case err := <-errs:
			return err
		default:
		}
	}
	return nil
}

func (l *loop) createPod(ctx context.Context, w *workload, ref *metav1.OwnerReference) error {
	if w.template == nil {
		return fmt.Errorf("%s %s has no pod template", l.gvk.Kind, w.key())
	}
	pod, err := podFromTemplate(w.template, w.obj.GetName(), ref)
	if err != nil {
		return err
	}
	created, err := l.client.CoreV1().Pods(w.obj.GetNamespace()).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			l.rec.Eventf(w.obj, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		}
		return err
	}
	l.log.Debug("created pod", "namespace", created.Namespace, "name", w.obj.GetName(), "pod", created.Name)
	l.rec.Eventf(w.obj, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return nil
}

func (l *loop) deletePodAPI(ctx context.Context, w *workload, p *corev1.Pod) error {
	err := l.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		l.rec.Eventf(w.obj, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pods: %w", err)
	}
	l.log.Debug("deleted pod", "namespace", p.Namespace, "name", w.obj.GetName(), "pod", p.Name)
	l.rec.Eventf(w.obj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
	return nil
}

// relatedPods are the pods of every workload of this kind that has the
// same controller as w (a deployment's ReplicaSets), each once.
func (l *loop) relatedPods(w *workload) ([]*corev1.Pod, error) {
	ref := metav1.GetControllerOf(w.obj)
	if ref == nil {
		return nil, nil
	}
	all, err := l.kind.list(w.obj.GetNamespace())
	if err != nil {
		return nil, err
	}
	seen := map[types.UID]bool{}
	var out []*corev1.Pod
	for _, other := range all {
		oref := metav1.GetControllerOf(other.obj)
		if oref == nil || oref.UID != ref.UID || other.selector == nil {
			continue
		}
		pods, err := l.pods.Pods(other.obj.GetNamespace()).List(other.selector)
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if !seen[p.UID] {
				seen[p.UID] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}
