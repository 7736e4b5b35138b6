package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// sync reconciles the deployment named by key. A write that lost a race
// with another (the informer cache was behind) is retried with backoff
// without being reported as a failure.
func (r *run) sync(ctx context.Context, key string) (reconcile.Result, error) {
	res, err := r.syncDeployment(ctx, key)
	if apierrors.IsConflict(err) {
		r.log.Debug("conflict; will retry", "key", key, "err", err)
		return reconcile.Result{Requeue: true}, nil
	}
	return res, err
}

// syncDeployment is upstream's: a deployment being deleted only gets its
// status; a paused one, or one whose size changed, is scaled
// (proportionally across its ReplicaSets); otherwise its strategy rolls it
// out.
func (r *run) syncDeployment(ctx context.Context, key string) (reconcile.Result, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return reconcile.Result{}, nil
	}
	cached, err := r.dLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	started := r.now()
	defer func() {
		r.log.Debug("synced deployment", "namespace", namespace, "name", name, "took", time.Since(started))
	}()
	d := cached.DeepCopy()

	if d.Spec.Selector == nil || reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		r.rec.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_, err := r.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, nil
	}
	rsList, err := r.replicaSetsForDeployment(ctx, d)
	if err != nil {
		return reconcile.Result{}, err
	}
	podMap, err := r.podMap(d, rsList)
	if err != nil {
		return reconcile.Result{}, err
	}
	if d.DeletionTimestamp != nil {
		return reconcile.Result{}, r.syncStatusOnly(ctx, d, rsList)
	}
	if err := r.checkPausedConditions(ctx, d); err != nil {
		return reconcile.Result{}, err
	}
	if d.Spec.Paused {
		return reconcile.Result{}, r.syncScale(ctx, d, rsList)
	}
	scaling, err := r.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return reconcile.Result{}, err
	}
	if scaling {
		return reconcile.Result{}, r.syncScale(ctx, d, rsList)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return r.rolloutRecreate(ctx, d, rsList, podMap)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return r.rolloutRolling(ctx, d, rsList)
	}
	return reconcile.Result{}, fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type)
}

// replicaSetsForDeployment lists the ReplicaSets the deployment controls,
// adopting matching orphans and releasing those that stopped matching.
func (r *run) replicaSetsForDeployment(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	all, err := r.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has invalid label selector: %v", d.Namespace, d.Name, err)
	}
	checked := false
	var adoptErr error
	canAdopt := func() error {
		if checked {
			return adoptErr
		}
		checked = true
		fresh, err := r.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			adoptErr = err
		case fresh.UID != d.UID:
			adoptErr = fmt.Errorf("original Deployment %s/%s is gone: got uid %s, wanted %s", d.Namespace, d.Name, fresh.UID, d.UID)
		case fresh.DeletionTimestamp != nil:
			adoptErr = fmt.Errorf("%s/%s has just been deleted at %v", d.Namespace, d.Name, fresh.DeletionTimestamp)
		}
		return adoptErr
	}
	var claimed []*appsv1.ReplicaSet
	var errs []error
	for _, rs := range all {
		switch controller.DecideClaim(d, rs, sel.Matches(labels.Set(rs.Labels))) {
		case controller.KeepObject:
			claimed = append(claimed, rs)
		case controller.AdoptObject:
			if err := canAdopt(); err != nil {
				errs = append(errs, fmt.Errorf("can't adopt ReplicaSet %s/%s (%s): %w", rs.Namespace, rs.Name, rs.UID, err))
				continue
			}
			adopted, err := r.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType,
				controller.AdoptPatch(controllerKind, d, rs.UID), metav1.PatchOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			r.log.Info("adopted replica set", "namespace", d.Namespace, "name", d.Name, "replicaSet", rs.Name)
			claimed = append(claimed, adopted)
		case controller.ReleaseObject:
			_, err := r.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType,
				controller.ReleasePatch(d.UID, rs.UID), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
				errs = append(errs, err)
				continue
			}
			r.log.Info("released replica set", "namespace", d.Namespace, "name", d.Name, "replicaSet", rs.Name)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

// podMap groups the deployment's pods (terminal ones too) by the UID of
// the ReplicaSet in rsList that controls them.
func (r *run) podMap(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	pods, err := r.podLister.Pods(d.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	m := make(map[types.UID][]*corev1.Pod, len(rsList))
	for _, rs := range rsList {
		m[rs.UID] = []*corev1.Pod{}
	}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			continue
		}
		if _, ok := m[ref.UID]; ok {
			m[ref.UID] = append(m[ref.UID], p)
		}
	}
	return m, nil
}

// syncStatusOnly writes the status without changing any ReplicaSet.
func (r *run) syncStatusOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := r.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	return r.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// syncScale handles a paused deployment or a change of its size: scale,
// clean up old ReplicaSets if paused, write the status.
func (r *run) syncScale(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := r.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := r.scale(ctx, d, newRS, oldRSs); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := r.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return r.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// checkPausedConditions records pausing and resuming in the Progressing
// condition (Unknown), so that a resumed deployment does not time out at
// once.
func (r *run) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cond := getCondition(d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == ReasonTimedOut {
		return nil
	}
	pausedExists := cond != nil && cond.Reason == ReasonPaused
	switch {
	case d.Spec.Paused && !pausedExists:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, "Deployment is paused", r.now()))
	case !d.Spec.Paused && pausedExists:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonResumed, "Deployment is resumed", r.now()))
	default:
		return nil
	}
	return r.updateStatus(ctx, d)
}

// isScalingEvent: an active ReplicaSet was sized for another number of
// replicas than the deployment now has.
func (r *run) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := r.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range filterActive(append(oldRSs, newRS)) {
		if desired, ok := intAnnotation(rs, DesiredReplicasAnnotation); ok && desired != dReplicas(d) {
			return true, nil
		}
	}
	return false, nil
}

// getAllReplicaSetsAndSyncRevision returns the new ReplicaSet (created if
// asked and missing) with its revision brought up to date, and the old ones.
func (r *run) getAllReplicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	_, oldRSs := FindOldReplicaSets(d, rsList)
	newRS, err := r.getNewReplicaSet(ctx, d, rsList, oldRSs, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, oldRSs, nil
}

// getNewReplicaSet finds the ReplicaSet whose template is the
// deployment's, raising its revision above every old one's (this is how a
// rollback makes an old ReplicaSet new again), or creates it.
func (r *run) getNewReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList, oldRSs []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	existing := FindNewReplicaSet(d, rsList)
	newRevision := strconv.FormatInt(MaxRevision(oldRSs)+1, 10)
	if existing != nil {
		rsCopy := existing.DeepCopy()
		annotationsUpdated := SetNewReplicaSetAnnotations(d, rsCopy, newRevision, true, maxRevHistoryLengthInChars)
		if annotationsUpdated || rsCopy.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rsCopy.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			return r.client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{})
		}
		needsUpdate := SetDeploymentRevision(d, rsCopy.Annotations[RevisionAnnotation])
		if hasProgressDeadline(d) && getCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewReplicaSet,
				fmt.Sprintf("Found new replica set %q", rsCopy.Name), r.now()))
			needsUpdate = true
		}
		if needsUpdate {
			if err := r.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return rsCopy, nil
	}
	if !create {
		return nil, nil
	}

	template := *d.Spec.Template.DeepCopy()
	hash := ComputeHash(&template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	newRS := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
	count, err := NewRSNewReplicas(d, append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS), newRS)
	if err != nil {
		return nil, err
	}
	*newRS.Spec.Replicas = count
	SetNewReplicaSetAnnotations(d, newRS, newRevision, false, maxRevHistoryLengthInChars)

	alreadyExists := false
	created, err := r.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, newRS, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		alreadyExists = true
		rs, getErr := r.rsLister.ReplicaSets(newRS.Namespace).Get(newRS.Name)
		if getErr != nil {
			return nil, getErr
		}
		// Ours and the same template: the cache was just behind.
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == d.UID && EqualIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			created, err = rs, nil
			break
		}
		// A hash collision: bump collisionCount and try again.
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		*d.Status.CollisionCount++
		if uerr := r.updateStatus(ctx, d); uerr == nil {
			r.log.Info("hash collision; bumped collisionCount", "namespace", d.Namespace, "name", d.Name,
				"collisionCount", *d.Status.CollisionCount)
		}
		return nil, err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", newRS.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedRSCreate, msg, r.now()))
			_ = r.updateStatus(ctx, d)
		}
		r.rec.Event(d, corev1.EventTypeWarning, ReasonFailedRSCreate, msg)
		return nil, err
	}
	if !alreadyExists && count > 0 {
		r.rec.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, count)
	}
	needsUpdate := SetDeploymentRevision(d, newRevision)
	if !alreadyExists && hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetCreated,
			fmt.Sprintf("Created new replica set %q", created.Name), r.now()))
		needsUpdate = true
	}
	if needsUpdate {
		err = r.updateStatus(ctx, d)
	}
	return created, err
}

func withLabel(l map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(l)+1)
	for lk, lv := range l {
		out[lk] = lv
	}
	out[k] = v
	return out
}

// scale resizes the deployment's ReplicaSets after a change of its size:
// the only active (or the newest) ReplicaSet takes it all; with a
// saturated new ReplicaSet the old ones go to 0; during a rolling update
// the change is spread proportionally.
func (r *run) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	if rs := FindActiveOrLatest(newRS, oldRSs); rs != nil {
		if replicas(rs) == dReplicas(d) {
			return nil
		}
		_, _, err := r.scaleReplicaSetAndRecordEvent(ctx, rs, dReplicas(d), d)
		return err
	}
	if IsSaturated(d, newRS) {
		for _, old := range filterActive(oldRSs) {
			if _, _, err := r.scaleReplicaSetAndRecordEvent(ctx, old, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if isRollingUpdate(d) {
		ops, op := proportionalScaleOps(d, newRS, oldRSs)
		for _, o := range ops {
			if _, _, err := r.scaleReplicaSet(ctx, o.RS, o.To, d, op); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *run) scaleReplicaSetAndRecordEvent(ctx context.Context, rs *appsv1.ReplicaSet, to int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	if replicas(rs) == to {
		return false, rs, nil
	}
	op := "down"
	if replicas(rs) < to {
		op = "up"
	}
	return r.scaleReplicaSet(ctx, rs, to, d, op)
}

// scaleReplicaSet sets rs's replicas and its desired/max annotations,
// recording ScalingReplicaSet when the size changes.
func (r *run) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, to int32, d *appsv1.Deployment, op string) (bool, *appsv1.ReplicaSet, error) {
	sizeChanged := replicas(rs) != to
	desired, maxReplicas := dReplicas(d), dReplicas(d)+MaxSurge(d)
	if !sizeChanged && !replicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return false, rs, nil
	}
	from := replicas(rs)
	rsCopy := rs.DeepCopy()
	rsCopy.Spec.Replicas = &to
	SetReplicasAnnotations(rsCopy, desired, maxReplicas)
	updated, err := r.client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{})
	if err != nil {
		return false, rs, err
	}
	if sizeChanged {
		r.rec.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", op, updated.Name, from, to)
	}
	return sizeChanged, updated, nil
}

// cleanupDeployment deletes the oldest old ReplicaSets beyond
// revisionHistoryLimit, of those that have no pods left.
func (r *run) cleanupDeployment(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if !hasRevisionHistoryLimit(d) {
		return nil
	}
	var cleanable []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			cleanable = append(cleanable, rs)
		}
	}
	diff := len(cleanable) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return nil
	}
	sort.Sort(byRevision(cleanable))
	for _, rs := range cleanable[:diff] {
		if rs.Status.Replicas != 0 || replicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration || rs.DeletionTimestamp != nil {
			continue
		}
		r.log.Info("deleting old replica set", "namespace", d.Namespace, "name", d.Name, "replicaSet", rs.Name)
		if err := r.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// syncDeploymentStatus writes the status calculated from the ReplicaSets
// if it changed.
func (r *run) syncDeploymentStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := calculateStatus(allRSs, newRS, d, r.now())
	if reflect.DeepEqual(d.Status, st) {
		return nil
	}
	d.Status = st
	return r.updateStatus(ctx, d)
}

// updateStatus writes d's status and its revision annotation, and makes d
// the written object. Upstream's API server takes metadata changes through
// /status; where one keeps only the status, the annotation is written
// through a merge patch of the main resource (with d's resourceVersion as
// a precondition).
func (r *run) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	out, err := r.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	if want, ok := d.Annotations[RevisionAnnotation]; ok && out.Annotations[RevisionAnnotation] != want {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations":     map[string]string{RevisionAnnotation: want},
			"resourceVersion": out.ResourceVersion,
		}})
		out, err = r.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return err
		}
	}
	*d = *out
	return nil
}
