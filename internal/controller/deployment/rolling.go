package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"

	"plainkube.dev/plainkube/internal/reconcile"
)

// rolloutRolling moves a RollingUpdate deployment one step: grow the new
// ReplicaSet as far as maxSurge allows, else shrink old ones as far as
// maxUnavailable allows; once complete, clean up old ReplicaSets.
func (r *run) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (reconcile.Result, error) {
	newRS, oldRSs, err := r.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return reconcile.Result{}, err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)

	scaledUp, err := r.reconcileNewReplicaSet(ctx, allRSs, newRS, d)
	if err != nil {
		return reconcile.Result{}, err
	}
	if scaledUp {
		return r.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	scaledDown, err := r.reconcileOldReplicaSets(ctx, allRSs, filterActive(oldRSs), newRS, d)
	if err != nil {
		return reconcile.Result{}, err
	}
	if scaledDown {
		return r.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if DeploymentComplete(d, &d.Status) {
		if err := r.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return reconcile.Result{}, err
		}
	}
	return r.syncRolloutStatus(ctx, allRSs, newRS, d)
}

func (r *run) reconcileNewReplicaSet(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	switch {
	case replicas(newRS) == dReplicas(d):
		return false, nil
	case replicas(newRS) > dReplicas(d):
		scaled, _, err := r.scaleReplicaSetAndRecordEvent(ctx, newRS, dReplicas(d), d)
		return scaled, err
	}
	n, err := NewRSNewReplicas(d, allRSs, newRS)
	if err != nil {
		return false, err
	}
	scaled, _, err := r.scaleReplicaSetAndRecordEvent(ctx, newRS, n, d)
	return scaled, err
}

// reconcileOldReplicaSets first removes old pods that are not available
// (that costs no availability), then old pods beyond the minimum
// available.
func (r *run) reconcileOldReplicaSets(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if totalSpecReplicas(oldRSs) == 0 {
		return false, nil
	}
	maxScaledDown := oldRSsMaxScaleDown(d, allRSs, newRS)
	if maxScaledDown <= 0 {
		return false, nil
	}
	oldRSs = append([]*appsv1.ReplicaSet(nil), oldRSs...)
	scaled := false
	apply := func(ops []scaleOp) error {
		for _, o := range ops {
			did, updated, err := r.scaleReplicaSetAndRecordEvent(ctx, o.RS, o.To, d)
			if err != nil {
				return err
			}
			scaled = scaled || did
			for i := range oldRSs {
				if oldRSs[i].UID == updated.UID {
					oldRSs[i] = updated
				}
			}
		}
		return nil
	}
	if err := apply(cleanupUnhealthyOps(oldRSs, maxScaledDown)); err != nil {
		// As upstream: give up on this pass quietly; the next one retries.
		r.log.Debug("cleaning up unhealthy replicas failed", "namespace", d.Namespace, "name", d.Name, "err", err)
		return false, nil
	}
	all := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	if err := apply(scaleDownOldOps(d, all, oldRSs)); err != nil {
		r.log.Debug("scaling down old replica sets failed", "namespace", d.Namespace, "name", d.Name, "err", err)
		return false, nil
	}
	return scaled, nil
}
