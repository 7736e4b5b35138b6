package scheduler

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

var metaCreate = metav1.CreateOptions{}

func metaForBinding(pod *v1.Pod) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
}

func deleteWithUID(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

func isNotFoundOrConflict(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsConflict(err)
}

// updatePodCondition sets cond in st, keeping lastTransitionTime when the
// status did not change; it reports whether anything changed (times
// aside).
func updatePodCondition(st *v1.PodStatus, cond v1.PodCondition) bool {
	cond.LastProbeTime = metav1.Time{}
	for i := range st.Conditions {
		old := &st.Conditions[i]
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		} else {
			cond.LastTransitionTime = metav1.Now()
		}
		if old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
			return false
		}
		*old = cond
		return true
	}
	cond.LastTransitionTime = metav1.Now()
	st.Conditions = append(st.Conditions, cond)
	return true
}

// updatePodStatus applies mutate to the pod's status and writes it with
// UpdateStatus, re-reading the pod on conflict. A pod whose UID changed
// (deleted and recreated) is left alone.
func (s *Scheduler) updatePodStatus(ctx context.Context, pod *v1.Pod, mutate func(*v1.PodStatus) bool) error {
	cur := pod.DeepCopy()
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh, err := s.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if fresh.UID != pod.UID {
				return nil
			}
			cur = fresh
		}
		first = false
		if !mutate(&cur.Status) {
			return nil
		}
		_, err := s.client.CoreV1().Pods(cur.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("updating status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return err
	})
}
