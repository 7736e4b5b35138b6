package kubelet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"plainkube.dev/plainkube/internal/kubelet/static"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Static pods (package static reads the manifests): the agent runs them as
// it runs the API's pods, and mirrors each into the API once it answers.

// watchManifests scans the manifests folder every SyncInterval and queues
// every static pod: the changed ones, and the others so that container
// exits are noticed (the relist of static pods, which also runs before the
// API server answers).
func (a *Agent) watchManifests(ctx context.Context, q interface{ Add(types.NamespacedName) }) {
	t := time.NewTicker(a.opts.SyncInterval)
	defer t.Stop()
	for {
		a.static.Scan(a.opts.ManifestsDir, a.opts.NodeName, time.Now(), a.log.Warn)
		for _, k := range a.static.Keys() {
			q.Add(k)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// syncStatic syncs what key names of static pods: it stops replaced and
// removed versions (with their grace period), deletes mirror pods that are
// orphaned, outdated or being deleted, runs the current version, creates
// its mirror pod once the API answers and reports its status there.
// apiPod is the API's pod of key (nil when none or not known yet).
func (a *Agent) syncStatic(ctx context.Context, key types.NamespacedName, apiPod *corev1.Pod) (reconcile.Result, error) {
	if a.static == nil {
		return reconcile.Result{}, nil
	}
	cur, stopping := a.static.Get(key)
	var res reconcile.Result
	for _, old := range stopping {
		out, err := a.converge(ctx, old)
		if err != nil {
			return res, err
		}
		if !out.deleted {
			res.RequeueAfter = time.Second
			continue
		}
		if err := a.forgetPod(old.UID); err != nil {
			return res, err
		}
		a.static.Stopped(key, old.UID)
		a.log.Info("static pod stopped", "pod", key.String(), "uid", old.UID)
	}
	var mirror *corev1.Pod
	if apiPod != nil && static.IsMirrorPod(apiPod) {
		mirror = apiPod
		stale := cur == nil || mirror.Annotations[static.AnnotationConfigMirror] != string(cur.UID)
		if d := mirror.DeletionTimestamp; d != nil && !stale {
			// Being deleted through the API: it goes, and comes back.
			// After a pause, so that clients waiting for the deletion see
			// the object first and then its deletion (kubectl 1.32 waits
			// out its whole timeout when the object vanishes between its
			// get and its list).
			if wait := mirrorDeletePause - time.Since(a.static.DeletionSeen(mirror.UID)); wait > 0 {
				res.RequeueAfter = wait
				return res, nil
			}
		}
		if stale || mirror.DeletionTimestamp != nil {
			if err := a.deleteMirror(ctx, mirror); err != nil {
				return res, err
			}
			a.static.DeletionDone(mirror.UID)
			mirror = nil
		}
	}
	if cur == nil {
		return res, nil
	}
	if len(stopping) > 0 && res.RequeueAfter > 0 {
		// As upstream, a new version starts once the old one has stopped.
		return res, nil
	}
	pod := cur.DeepCopy()
	switch st, ok := a.static.LastStatus(cur.UID); {
	case mirror != nil:
		pod.Status = *mirror.Status.DeepCopy()
	case ok:
		pod.Status = st
	}
	out, err := a.converge(ctx, pod)
	if !out.observed {
		return res, err
	}
	st := podStatus(pod, out.obs, nodeEnv{HostIP: a.host.ip}, time.Now())
	a.static.SetStatus(cur, st)
	if a.apiSynced.Load() {
		if mirror == nil && (apiPod == nil || static.IsMirrorPod(apiPod)) {
			if cerr := a.createMirror(ctx, cur); cerr != nil && err == nil {
				err = cerr
			}
		} else if mirror != nil && !apiequality.Semantic.DeepEqual(st, mirror.Status) {
			upd := mirror.DeepCopy()
			upd.Status = st
			if _, uerr := a.cs.CoreV1().Pods(key.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); uerr != nil && !apierrors.IsNotFound(uerr) && err == nil {
				err = uerr // a conflict requeues: the informer is behind
			}
		}
	}
	if err != nil {
		return res, err
	}
	if !out.next.IsZero() {
		d := max(time.Until(out.next), 10*time.Millisecond)
		if res.RequeueAfter == 0 || d < res.RequeueAfter {
			res.RequeueAfter = d
		}
	}
	return res, nil
}

// mirrorDeletePause is how long a mirror pod deleted through the API stays
// before the agent removes it (and creates it again).
const mirrorDeletePause = time.Second

// createMirror creates the mirror pod of static pod pod: a copy with the
// config.mirror annotation set to its hash, owned by the Node.
func (a *Agent) createMirror(ctx context.Context, pod *corev1.Pod) error {
	m := pod.DeepCopy()
	m.UID, m.ResourceVersion = "", ""
	m.Annotations[static.AnnotationConfigMirror] = pod.Annotations[static.AnnotationConfigHash]
	controller := true
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: a.opts.NodeName, UID: a.nodeUID, Controller: &controller}}
	m.Status = corev1.PodStatus{}
	_, err := a.cs.CoreV1().Pods(m.Namespace).Create(ctx, m, metav1.CreateOptions{})
	switch {
	case err == nil:
		a.log.Info("mirror pod created", "pod", m.Namespace+"/"+m.Name)
	case apierrors.IsAlreadyExists(err):
		return nil // the informer has not seen it yet, or a pod that is not a mirror has the name
	case apierrors.IsNotFound(err):
		return fmt.Errorf("creating mirror pod %s/%s: %w (does the namespace exist?)", m.Namespace, m.Name, err)
	}
	return err
}

// deleteMirror deletes a mirror pod at once (it comes back if its static
// pod is still there).
func (a *Agent) deleteMirror(ctx context.Context, mirror *corev1.Pod) error {
	zero := int64(0)
	err := a.cs.CoreV1().Pods(mirror.Namespace).Delete(ctx, mirror.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &mirror.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	a.log.Info("mirror pod deleted", "pod", mirror.Namespace+"/"+mirror.Name)
	return nil
}
