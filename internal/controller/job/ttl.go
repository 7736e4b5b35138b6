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

// applyTTL carries out planTTL: before the expiry it looks again then;
// after, it checks a fresh copy (its TTL may have changed) and deletes the
// job in the foreground (its pods go first), with the copy's
// resourceVersion as a precondition.
func (l *loop) applyTTL(ctx context.Context, key string, job *batchv1.Job, p Plan) error {
	if p.Err != nil || !p.DeleteExpired {
		if p.RequeueAfter > 0 {
			l.queue.AddAfter(key, p.RequeueAfter)
		}
		return p.Err
	}
	fresh, err := l.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if p := planTTL(fresh, l.clock.Now()); p.Err != nil || !p.DeleteExpired {
		if p.RequeueAfter > 0 {
			l.queue.AddAfter(key, p.RequeueAfter)
		}
		return p.Err
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
