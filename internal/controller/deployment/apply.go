package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// observe reads the deployment named by key, the ReplicaSets of its
// namespace and, for a Recreate deployment, its pods from the caches; ok
// is false when the deployment is gone.
func (r *run) observe(key string) (st State, ok bool, err error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return State{}, false, nil
	}
	d, err := r.dLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	st = State{Deployment: d, Now: r.now()}
	if st.ReplicaSets, err = r.rsLister.ReplicaSets(namespace).List(labels.Everything()); err != nil {
		return State{}, false, err
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && d.Spec.Selector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && !sel.Empty() {
			if st.Pods, err = r.podLister.Pods(namespace).List(sel); err != nil {
				return State{}, false, err
			}
		}
	}
	return st, true, nil
}

// apply writes a Plan: events, claims, the ReplicaSet steps in order, then
// the status.
func (r *run) apply(ctx context.Context, st State, p Plan) (reconcile.Result, error) {
	d := st.Deployment
	for _, e := range p.Events {
		r.rec.Event(d, e.Type, e.Reason, e.Message)
	}
	// resourceVersions holds what a write returned, for a later write of
	// the same ReplicaSet in this pass.
	resourceVersions := map[string]string{}
	if err := r.claim(ctx, d, p.Adopt, p.Release, resourceVersions); err != nil {
		return reconcile.Result{}, err
	}
	quietFailed := false
	for _, s := range p.Steps {
		rs := s.ReplicaSet
		var err error
		switch s.Kind {
		case CreateReplicaSet:
			_, err = r.client.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
			if err != nil {
				return r.createFailed(ctx, s, err, st.Now)
			}
		case UpdateReplicaSet:
			if s.Quiet && quietFailed {
				continue
			}
			if rv, ok := resourceVersions[rs.Name]; ok {
				rs = rs.DeepCopy()
				rs.ResourceVersion = rv
			}
			var out *appsv1.ReplicaSet
			out, err = r.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
			if err == nil {
				resourceVersions[rs.Name] = out.ResourceVersion
			}
		case DeleteReplicaSet:
			r.log.Info("deleting old replica set", "namespace", d.Namespace, "name", d.Name, "replicaSet", rs.Name)
			err = r.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
		}
		if err != nil && s.Quiet {
			// As upstream: give up on this pass's scale-downs quietly; the
			// next pass retries.
			r.log.Debug("scaling down old replica set failed", "namespace", d.Namespace, "name", d.Name, "replicaSet", rs.Name, "err", err)
			quietFailed = true
			continue
		}
		if err != nil {
			return reconcile.Result{}, err
		}
		if s.Event != nil {
			r.rec.Event(d, s.Event.Type, s.Event.Reason, s.Event.Message)
		}
	}
	if p.Status != nil {
		if err := r.updateStatus(ctx, p.Status); err != nil {
			return reconcile.Result{}, err
		}
	}
	return p.Result, p.Err
}

// claim adopts and releases ReplicaSets. Before the first adoption it
// reads the deployment afresh: one deleted (or replaced) since the cache
// saw it adopts nothing.
func (r *run) claim(ctx context.Context, d *appsv1.Deployment, adopt, release []*appsv1.ReplicaSet, resourceVersions map[string]string) error {
	var errs []error
	var canAdopt error
	if len(adopt) > 0 {
		fresh, err := r.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		canAdopt = controller.RecheckOwner(controllerKind.Kind, d, fresh, err)
	}
	for _, rs := range adopt {
		if canAdopt != nil {
			errs = append(errs, fmt.Errorf("can't adopt ReplicaSet %s/%s (%s): %w", rs.Namespace, rs.Name, rs.UID, canAdopt))
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
		resourceVersions[rs.Name] = adopted.ResourceVersion
		r.log.Info("adopted replica set", "namespace", d.Namespace, "name", d.Name, "replicaSet", rs.Name)
	}
	for _, rs := range release {
		_, err := r.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType,
			controller.ReleasePatch(d.UID, rs.UID), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			errs = append(errs, err)
			continue
		}
		r.log.Info("released replica set", "namespace", d.Namespace, "name", d.Name, "replicaSet", rs.Name)
	}
	return utilerrors.NewAggregate(errs)
}

// createFailed writes what planCreateFailure decides after the new
// ReplicaSet's create failed, and ends the pass.
func (r *run) createFailed(ctx context.Context, s Step, err error, now time.Time) (reconcile.Result, error) {
	cached, _ := r.rsLister.ReplicaSets(s.ReplicaSet.Namespace).Get(s.ReplicaSet.Name)
	status, events, retry := planCreateFailure(s.Before, s.ReplicaSet, err, cached, now)
	if retry {
		return reconcile.Result{Requeue: true}, nil
	}
	for _, e := range events {
		r.rec.Event(s.Before, e.Type, e.Reason, e.Message)
	}
	if status != nil {
		if uerr := r.updateStatus(ctx, status); uerr == nil && apierrors.IsAlreadyExists(err) {
			r.log.Info("hash collision; bumped collisionCount", "namespace", status.Namespace, "name", status.Name,
				"collisionCount", *status.Status.CollisionCount)
		}
	}
	return reconcile.Result{}, err
}

// updateStatus writes d's status and its revision annotation. Upstream's
// API server takes metadata changes through /status; where one keeps only
// the status, the annotation is written through a merge patch of the main
// resource (with the written resourceVersion as a precondition).
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
		_, err = r.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	return err
}
