package job

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ttlExpiry is when a finished job with spec.ttlSecondsAfterFinished is
// to be deleted: that long after its Complete or Failed condition became
// True. ok is false for a job that is not to be cleaned up (no TTL, not
// finished, already being deleted).
func ttlExpiry(job *batchv1.Job) (at time.Time, ok bool, err error) {
	if job.Spec.TTLSecondsAfterFinished == nil || job.DeletionTimestamp != nil {
		return time.Time{}, false, nil
	}
	c := finishedCondition(job)
	if c == nil {
		return time.Time{}, false, nil
	}
	if c.LastTransitionTime.IsZero() {
		return time.Time{}, false, fmt.Errorf("unable to find the time when the Job %s/%s finished", job.Namespace, job.Name)
	}
	return c.LastTransitionTime.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second), true, nil
}

// syncTTL is upstream's TTL-after-finished controller for one finished
// job: before its expiry it looks again then; after, it checks a fresh
// copy and deletes the job in the foreground (its pods go first), with the
// copy's resourceVersion as a precondition so that a TTL changed meanwhile
// is honoured.
func (l *loop) syncTTL(ctx context.Context, key string, job *batchv1.Job) error {
	at, ok, err := ttlExpiry(job)
	if err != nil || !ok {
		return err
	}
	if left := at.Sub(l.clock.Now()); left > 0 {
		l.queue.AddAfter(key, left)
		return nil
	}
	fresh, err := l.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	at, ok, err = ttlExpiry(fresh)
	if err != nil || !ok {
		return err
	}
	if left := at.Sub(l.clock.Now()); left > 0 {
		l.queue.AddAfter(key, left)
		return nil
	}
	policy := metav1.DeletePropagationForeground
	err = l.client.BatchV1().Jobs(fresh.Namespace).Delete(ctx, fresh.Name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{ResourceVersion: &fresh.ResourceVersion},
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	l.log.Info("deleted finished job after its TTL", "namespace", fresh.Namespace, "name", fresh.Name)
	return nil
}
