package deployment

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// rolloutConditions updates the Progressing and ReplicaFailure conditions
// of newStatus during a rollout, as upstream's syncRolloutStatus: complete
// (NewReplicaSetAvailable), progressing (ReplicaSetUpdated, refreshing
// lastUpdateTime), or past the deadline (ProgressDeadlineExceeded). A
// ReplicaFailure of the new ReplicaSet, else of an old one, is copied.
func rolloutConditions(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, newStatus *appsv1.DeploymentStatus, now time.Time) {
	if !hasProgressDeadline(d) {
		removeCondition(newStatus, appsv1.DeploymentProgressing)
	}
	current := getCondition(d.Status, appsv1.DeploymentProgressing)
	complete := newStatus.Replicas == newStatus.UpdatedReplicas && current != nil && current.Reason == ReasonNewReplicaSetAvailable
	if hasProgressDeadline(d) && !complete {
		subject := func(verb string) string {
			if newRS != nil {
				return fmt.Sprintf("ReplicaSet %q %s.", newRS.Name, verb)
			}
			return fmt.Sprintf("Deployment %q %s.", d.Name, verb)
		}
		switch {
		case DeploymentComplete(d, newStatus):
			setCondition(newStatus, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable,
				subject("has successfully progressed"), now))
		case DeploymentProgressing(d, newStatus):
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, subject("is progressing"), now)
			// Same reason, fresh lastUpdateTime: the deadline counts from
			// the last progress.
			if current != nil {
				if current.Status == corev1.ConditionTrue {
					c.LastTransitionTime = current.LastTransitionTime
				}
				removeCondition(newStatus, appsv1.DeploymentProgressing)
			}
			setCondition(newStatus, c)
		case DeploymentTimedOut(d, newStatus, now):
			setCondition(newStatus, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonTimedOut,
				subject("has timed out progressing"), now))
		}
	}
	if failures := replicaFailures(allRSs, newRS); len(failures) > 0 {
		setCondition(newStatus, failures[0])
	} else {
		removeCondition(newStatus, appsv1.DeploymentReplicaFailure)
	}
}

// replicaFailures are the ReplicaFailure conditions of the new ReplicaSet,
// or if it has none of the others.
func replicaFailures(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []appsv1.DeploymentCondition {
	var out []appsv1.DeploymentCondition
	collect := func(rs *appsv1.ReplicaSet) {
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				out = append(out, replicaSetToDeploymentCondition(c))
			}
		}
	}
	if newRS != nil {
		collect(newRS)
	}
	if len(out) > 0 {
		return out
	}
	for _, rs := range allRSs {
		if rs != nil {
			collect(rs)
		}
	}
	return out
}

// stuckRequeue says when to look at a deployment again that made no
// progress, to notice its deadline passing: never (ok false) for a
// complete or timed-out one or one without a deadline; else at the
// Progressing condition's lastUpdateTime plus the deadline (and a second).
// A wait under a second is returned as 0: requeue with backoff now.
func stuckRequeue(d *appsv1.Deployment, newStatus *appsv1.DeploymentStatus, now time.Time) (time.Duration, bool) {
	current := getCondition(d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || current == nil {
		return 0, false
	}
	if DeploymentComplete(d, newStatus) || current.Reason == ReasonTimedOut {
		return 0, false
	}
	after := current.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now)
	if after < time.Second {
		return 0, true
	}
	return after + time.Second, true
}
