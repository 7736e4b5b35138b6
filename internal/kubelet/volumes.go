package kubelet

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/kubelet/podstatus"
	"plainkube.dev/plainkube/internal/kubelet/runtime"
	"plainkube.dev/plainkube/internal/reconcile"
)

// The agent's side of volumes (package volumes sets them up): a pod's
// sync waits until its volumes are set up, and a pod whose emptyDir is
// over its sizeLimit is evicted.

// syncVolumes sets up, refreshes and checks pod's volumes during its
// sync. When done is true the pod cannot go on yet (its volumes are not
// ready, or it was just evicted): the sync ends with res.
func (a *Agent) syncVolumes(ctx context.Context, pod *corev1.Pod) (res reconcile.Result, done bool) {
	if pod.DeletionTimestamp != nil || terminal(pod.Status.Phase) {
		return reconcile.Result{}, false
	}
	if _, err := a.vols.Setup(ctx, pod); err != nil {
		// Not set up yet: the pod waits, its containers ContainerCreating.
		if obs, oerr := a.observe(ctx, pod); oerr == nil {
			_ = a.updateStatus(ctx, pod, obs)
		}
		return reconcile.Result{RequeueAfter: max(time.Until(a.vols.RetryAt(pod.UID)), 100*time.Millisecond)}, true
	}
	if msg := a.vols.OverLimit(pod); msg != "" {
		a.evict(ctx, pod, msg)
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, true
	}
	return reconcile.Result{}, false
}

// allocatable is the node's allocatable cpu, memory and ephemeral storage.
func (a *Agent) allocatable() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              a.host.cpu,
		corev1.ResourceMemory:           a.host.memory,
		corev1.ResourceEphemeralStorage: a.host.storage,
	}
}

// evictionGrace is the grace period of containers of a pod evicted for
// an emptyDir over its limit (upstream's immediate eviction).
const evictionGrace = 1

// evict fails pod as upstream's eviction manager does (phase Failed,
// reason Evicted, a DisruptionTarget condition, an Evicted event) and
// stops its running containers with a grace period of 1s; the sandbox
// then goes as that of any finished pod.
func (a *Agent) evict(ctx context.Context, pod *corev1.Pod, msg string) {
	a.log.Info("evicting pod", "pod", pod.Namespace+"/"+pod.Name, "reason", msg)
	a.events.Record(pod, "", corev1.EventTypeWarning, "Evicted", "%s", msg)
	upd := pod.DeepCopy()
	upd.Status.Phase, upd.Status.Reason, upd.Status.Message = corev1.PodFailed, "Evicted", msg
	podstatus.SetCondition(&upd.Status, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: corev1.PodReasonTerminationByKubelet, Message: msg, ObservedGeneration: pod.Generation}, time.Now())
	if apiequality.Semantic.DeepEqual(upd.Status, pod.Status) {
		return
	}
	if _, err := a.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		if !apierrors.IsNotFound(err) {
			a.log.Warn("evicting pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
		return
	}
	obs, err := a.observe(ctx, pod)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, runs := range obs.Containers {
		for _, r := range runs {
			if r.State == runtime.Running {
				wg.Go(func() { _ = a.cri.StopContainer(ctx, r.ID, evictionGrace) })
			}
		}
	}
	wg.Wait()
}
