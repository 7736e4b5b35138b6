package replicaset

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

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

	"plainkube.dev/plainkube/internal/api/podutil"
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

// observed counts a pod event against the expectations of the workload
// that controls the pod, and looks at the workload again when a pod that
// became ready will be available.
func (l *loop) observed(key string, event controller.Event, old, cur metav1.Object) {
	pod := cur.(*corev1.Pod)
	switch {
	case event == controller.Deleted || pod.DeletionTimestamp != nil:
		// A graceful deletion started (or a pod seen first while being
		// deleted): replace it now rather than when it is finally removed.
		l.exp.DeletionObserved(key, controller.ObjectKey(pod))
	case event == controller.Added:
		l.exp.CreationObserved(key)
	case event == controller.Updated && !podutil.IsReady(old.(*corev1.Pod)) && podutil.IsReady(pod):
		namespace, name, _ := cache.SplitMetaNamespaceKey(key)
		if w, err := l.kind.get(namespace, name); err == nil && w.minReadySeconds > 0 {
			// A second late, so as not to be early.
			l.queue.AddAfter(key, time.Duration(w.minReadySeconds)*time.Second+time.Second)
		}
	}
}

// observe reads the workload named by key and the pods of its namespace;
// ok is false when there is nothing to do (the workload is gone, or its
// selector does not parse).
func (l *loop) observe(key string) (st State, ok bool, err error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return State{}, false, nil
	}
	w, err := l.kind.get(namespace, name)
	if apierrors.IsNotFound(err) {
		l.exp.Forget(key)
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	if w.selector == nil {
		l.log.Error("invalid selector; not syncing", "namespace", namespace, "name", name)
		return State{}, false, nil
	}
	st = State{Workload: w, Manage: l.exp.Satisfied(key), TracksTerminating: l.kind.tracksTerminating(), Burst: l.burst, Now: l.now()}
	if st.Pods, err = l.pods.Pods(namespace).List(labels.Everything()); err != nil {
		return State{}, false, err
	}
	if st.Manage && l.mayDelete(w, st.Pods) {
		if st.Related, err = l.relatedPods(w); err != nil {
			return State{}, false, err
		}
	}
	return st, true, nil
}

// mayDelete: more active pods are the workload's, or may become its, than
// it wants; only then does the plan rank pods to delete.
func (l *loop) mayDelete(w *workload, pods []*corev1.Pod) bool {
	n := 0
	for _, p := range pods {
		if !podutil.IsActive(p) {
			continue
		}
		switch controller.DecideClaim(w.obj, p, w.selector.Matches(labels.Set(p.Labels))) {
		case controller.KeepObject, controller.AdoptObject:
			n++
		}
	}
	return n > int(w.replicas)
}

// apply makes the plan's claims, creates and deletes, then writes the
// status that follows from how they went.
func (l *loop) apply(ctx context.Context, st State, p Plan) (reconcile.Result, error) {
	w := st.Workload
	if err := l.claim(ctx, w, p.Adopt, p.Release); err != nil {
		return reconcile.Result{}, err
	}
	manageErr := l.manage(ctx, w, p)
	s, changed, after := planStatus(st, p, manageErr)
	if changed {
		if err := l.writeStatus(ctx, w, s); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: after}, manageErr
}

// writeStatus writes s, retrying once on a fresh copy after a failed
// write.
func (l *loop) writeStatus(ctx context.Context, w *workload, s status) error {
	for i := 0; ; i++ {
		_, err := l.kind.updateStatus(ctx, w, s)
		if err == nil {
			return nil
		}
		if i >= 1 {
			return err
		}
		if w, err = l.kind.getLive(ctx, w.obj.GetNamespace(), w.obj.GetName()); err != nil {
			return err
		}
	}
}

// claim adopts and releases pods. Before the first adoption it reads the
// workload afresh: the cache may be stale, and a workload deleted (or
// replaced) since adopts nothing.
func (l *loop) claim(ctx context.Context, w *workload, adopt, release []*corev1.Pod) error {
	var errs []error
	var canAdopt error
	if len(adopt) > 0 {
		fresh, err := l.kind.getLive(ctx, w.obj.GetNamespace(), w.obj.GetName())
		var freshObj metav1.Object
		if err == nil {
			freshObj = fresh.obj
		}
		canAdopt = controller.RecheckOwner(l.gvk.Kind, w.obj, freshObj, err)
	}
	for _, p := range adopt {
		if canAdopt != nil {
			errs = append(errs, fmt.Errorf("can't adopt Pod %s/%s (%s): %w", p.Namespace, p.Name, p.UID, canAdopt))
			continue
		}
		_, err := l.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType,
			controller.AdoptPatch(l.gvk, w.obj, p.UID), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		l.log.Debug("adopted pod", "namespace", p.Namespace, "name", w.obj.GetName(), "pod", p.Name)
	}
	for _, p := range release {
		_, err := l.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType,
			controller.ReleasePatch(w.obj.GetUID(), p.UID), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			errs = append(errs, err)
			continue
		}
		l.log.Debug("released pod", "namespace", p.Namespace, "name", w.obj.GetName(), "pod", p.Name)
	}
	return utilerrors.NewAggregate(errs)
}

// manage makes the plan's creates (in slow-start batches) or deletes,
// expecting each in the informer first.
func (l *loop) manage(ctx context.Context, w *workload, p Plan) error {
	key := w.key()
	switch {
	case p.Create > 0:
		n := p.Create
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
	case len(p.Delete) > 0:
		l.exp.ExpectDeletions(key, controller.ObjectKeys(p.Delete))
		errs := make(chan error, len(p.Delete))
		var wg sync.WaitGroup
		for _, pod := range p.Delete {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := l.deletePod(ctx, w, pod); err != nil {
					// Its deletion will not be seen.
					l.exp.DeletionObserved(key, controller.ObjectKey(pod))
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

func (l *loop) deletePod(ctx context.Context, w *workload, p *corev1.Pod) error {
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
