package sim

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/reconcile"
)

// maxConflicts is how many times syncPod re-reads a pod whose status
// update conflicted before it gives up (and the queue retries).
const maxConflicts = 5

// syncPod brings one pod's status to what decide says, deletes it when
// decide says so, and comes back when its next transition is due.
func (s *Sim) syncPod(ctx context.Context, key types.NamespacedName) (reconcile.Result, error) {
	pod, err := s.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	n := s.byName[pod.Spec.NodeName]
	if n == nil || !n.active() {
		return reconcile.Result{}, nil // a dead node's pods wait for it
	}
	client := s.cs.CoreV1().Pods(key.Namespace)
	var (
		d   decision
		now time.Time
	)
	for attempt := 0; ; attempt++ {
		now = s.opts.Clock.Now()
		d = decide(pod, s.env(n, pod), now)
		if apiequality.Semantic.DeepEqual(d.status, pod.Status) {
			break
		}
		upd := pod.DeepCopy()
		upd.Status = d.status
		_, err := client.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err == nil {
			break
		}
		if apierrors.IsNotFound(err) {
			n.getIPAM().release(pod.UID)
			return reconcile.Result{}, nil
		}
		if !apierrors.IsConflict(err) || attempt >= maxConflicts {
			return reconcile.Result{}, err
		}
		// The cache is behind: read the pod as it is now.
		pod, err = client.Get(ctx, key.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, err
		}
		if pod.Spec.NodeName != n.name {
			return reconcile.Result{}, nil
		}
	}
	if terminal(d.status.Phase) || d.delete {
		n.getIPAM().release(pod.UID)
	}
	if d.delete {
		zero := int64(0)
		err := client.Delete(ctx, key.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero,
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, nil
	}
	if d.next.IsZero() {
		return reconcile.Result{}, nil
	}
	if wait := d.next.Sub(now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	return reconcile.Result{Requeue: true}, nil
}

// env is what decide needs of node n for pod: the host address, and an
// address for the pod if it is about to need one.
func (s *Sim) env(n *simNode, pod *corev1.Pod) podEnv {
	e := podEnv{hostIP: n.hostIP}
	if resizeOutstanding(pod, &pod.Status) {
		e.allocatable = corev1.ResourceList{corev1.ResourceCPU: s.opts.CPU.DeepCopy(), corev1.ResourceMemory: s.opts.Memory.DeepCopy()}
		e.used = s.used(n, pod)
	}
	if pod.Spec.HostNetwork || terminal(pod.Status.Phase) || pod.DeletionTimestamp != nil {
		return e
	}
	a := n.getIPAM()
	if pod.Status.PodIP != "" {
		a.claim(pod.UID, pod.Status.PodIP)
		return e
	}
	if pod.Status.StartTime != nil {
		return e // started without an address (by another kubelet): leave it so
	}
	if ip, ok := a.allocate(pod.UID); ok {
		e.podIP = ip.String()
	} else {
		s.log.Warn("no pod address free on simulated node", "node", n.name, "pod", pod.Namespace+"/"+pod.Name)
	}
	return e
}
