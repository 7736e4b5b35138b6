package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/reconcile"
)

// rolloutRecreate moves a Recreate deployment one step: scale every old
// ReplicaSet to 0, wait until none of their pods runs, then create the new
// ReplicaSet at full size.
func (r *run) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, podMap map[types.UID][]*corev1.Pod) (reconcile.Result, error) {
	// Do not create the new ReplicaSet yet: no scaling up before the old
	// pods are gone.
	newRS, oldRSs, err := r.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return reconcile.Result{}, err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)

	scaledDown := false
	for _, rs := range filterActive(oldRSs) {
		did, _, err := r.scaleReplicaSetAndRecordEvent(ctx, rs, 0, d)
		if err != nil {
			return reconcile.Result{}, err
		}
		scaledDown = scaledDown || did
	}
	if scaledDown {
		return r.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if oldPodsRunning(newRS, oldRSs, podMap) {
		return r.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if newRS == nil {
		newRS, oldRSs, err = r.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
		if err != nil {
			return reconcile.Result{}, err
		}
		allRSs = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	}
	if _, _, err := r.scaleReplicaSetAndRecordEvent(ctx, newRS, dReplicas(d), d); err != nil {
		return reconcile.Result{}, err
	}
	if DeploymentComplete(d, &d.Status) {
		if err := r.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return reconcile.Result{}, err
		}
	}
	return r.syncRolloutStatus(ctx, allRSs, newRS, d)
}

// oldPodsRunning: an old ReplicaSet still reports pods, or a pod of one is
// not terminal (pods in phase Unknown count as running).
func oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, podMap map[types.UID][]*corev1.Pod) bool {
	if totalStatusReplicas(oldRSs) > 0 {
		return true
	}
	for uid, pods := range podMap {
		if newRS != nil && newRS.UID == uid {
			continue
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
				return true
			}
		}
	}
	return false
}
