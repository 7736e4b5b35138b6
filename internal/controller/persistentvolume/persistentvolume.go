package persistentvolume

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-helpers/storage/volume"

	"plainkube.dev/plainkube/internal/api/claimindex"
	"plainkube.dev/plainkube/internal/api/storageclass"
	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Name is the controller's name.
const Name = "persistentvolume"

// Component is the source of its events, as upstream's.
const Component = "persistentvolume-controller"

// DefaultResync is how often every claim is looked at again, as
// upstream's --pvclaimbinder-sync-period.
const DefaultResync = 15 * time.Second

// Workers is how many claims and volumes are synced at once. Binding one
// claim is several writes in a row (the claim's provisioner annotation,
// then the volume, its status, the claim and its status), so with the
// manager's default of 2 a burst of claims waited on write latency: 1,000
// claims took minutes. A key is never synced by two workers at once; two
// claims racing for one volume are settled by the volume's
// resourceVersion (see bind).
const Workers = 10

// Workers is the number of workers the controller manager runs it with.
func (c *Controller) Workers() int { return Workers }

// Keys in the queue name a claim or a volume.
const (
	claimPrefix  = "claim:"
	volumePrefix = "volume:"
)

// Controller binds PersistentVolumeClaims to PersistentVolumes.
type Controller struct {
	controller.Base
	// Resync is how often every claim is synced again; set before Run.
	Resync time.Duration
}

var _ reconcile.Controller = (*Controller)(nil)

// New builds the controller's client from cfg.
func New(cfg *rest.Config) (*Controller, error) {
	base, err := controller.NewBase(Name, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{Base: base, Resync: DefaultResync}, nil
}

// run is one Run's listers, recorder and logger.
type run struct {
	*Controller
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	// volumeIndex and podIndex hold volumes and pods by claim
	// (claimindex).
	volumeIndex, podIndex cache.Indexer
	rec                   record.EventRecorder
	log                   *slog.Logger
	// queue takes a claim's key when a volume's sync finds the claim's
	// binding to finish.
	queue interface{ Add(string) }
}

// Run watches claims, volumes, StorageClasses and pods and syncs claims
// and volumes with workers workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	b := controller.NewBuilder(controller.Config{Name: Name, Component: Component, Client: c.Client, Logger: c.Logger,
		Shared: c.Informers, Primary: &corev1.PersistentVolumeClaim{}, Resync: c.Resync})
	claimInf := b.Informers().Core().V1().PersistentVolumeClaims()
	volumeInf := b.Informers().Core().V1().PersistentVolumes()
	classInf := b.Informers().Storage().V1().StorageClasses()
	podInf := b.SharedInformers().Core().V1().Pods()
	// A claim's sync looks only at the volumes that can matter to it and at
	// its own pods: with a thousand claims, listing every volume and pod
	// for each made the binder quadratic.
	if err := reconcile.AddIndexer(volumeInf.Informer(), claimindex.Volumes, claimindex.VolumesByClaim); err != nil {
		return err
	}
	if err := reconcile.AddIndexer(podInf.Informer(), claimindex.Pods, claimindex.PodsByClaim); err != nil {
		return err
	}
	r := &run{Controller: c, claims: claimInf.Lister(), volumes: volumeInf.Lister(), classes: classInf.Lister(),
		volumeIndex: volumeInf.Informer().GetIndexer(), podIndex: podInf.Informer().GetIndexer(), log: b.Logger(), queue: b.Queue()}

	b.Watches(claimInf.Informer(), controller.AllEvents, func(_, obj any) []string {
		claim, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok {
			return nil
		}
		keys := []string{claimPrefix + claim.Namespace + "/" + claim.Name}
		if claim.Spec.VolumeName != "" {
			keys = append(keys, volumePrefix+claim.Spec.VolumeName)
		}
		return keys
	}).
		Watches(volumeInf.Informer(), controller.AllEvents, func(_, obj any) []string {
			pv, ok := obj.(*corev1.PersistentVolume)
			if !ok {
				return nil
			}
			keys := []string{volumePrefix + pv.Name}
			if ref := pv.Spec.ClaimRef; ref != nil {
				keys = append(keys, claimPrefix+ref.Namespace+"/"+ref.Name)
			}
			return keys
		}).
		WaitsFor(classInf.Informer(), podInf.Informer())
	return b.Run(ctx, workers, func(rec record.EventRecorder) reconcile.ReconcileFunc[string] {
		r.rec = rec
		return controller.RetryConflicts(r.log, r.sync)
	})
}

func (r *run) sync(ctx context.Context, key string) (reconcile.Result, error) {
	if k, ok := strings.CutPrefix(key, claimPrefix); ok {
		return r.syncClaim(ctx, k)
	}
	if k, ok := strings.CutPrefix(key, volumePrefix); ok {
		return r.syncVolume(ctx, k)
	}
	return reconcile.Result{}, nil
}

// ---- claims ----

func (r *run) observeClaim(key string) (ClaimState, bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return ClaimState{}, false, nil
	}
	claim, err := r.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return ClaimState{}, false, nil
	}
	if err != nil {
		return ClaimState{}, false, err
	}
	volumes, err := r.candidateVolumes(claim)
	if err != nil {
		return ClaimState{}, false, err
	}
	st := ClaimState{Claim: claim, Volumes: volumes}
	if class := volume.GetPersistentVolumeClaimClass(claim); class != "" {
		st.Class, st.ClassErr = r.classes.Get(class)
		if st.ClassErr != nil && !apierrors.IsNotFound(st.ClassErr) {
			return ClaimState{}, false, st.ClassErr
		}
	}
	if !volume.PersistentVolumeClaimHasClass(claim) && claim.Spec.VolumeName == "" {
		classes, err := r.classes.List(labels.Everything())
		if err != nil {
			return ClaimState{}, false, err
		}
		st.DefaultClass = storageclass.Default(classes)
	}
	// The pods waiting for it only name themselves in the event of a
	// claim that waits for its first consumer to be scheduled.
	_, bound := claim.Annotations[volume.AnnBindCompleted]
	_, selected := claim.Annotations[volume.AnnSelectedNode]
	if !bound && !selected && claim.Spec.VolumeName == "" {
		pods, err := r.podIndex.ByIndex(claimindex.Pods, key)
		if err != nil {
			return ClaimState{}, false, err
		}
		for _, obj := range pods {
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == "" {
				st.UnscheduledPods = append(st.UnscheduledPods, p.Name)
			}
		}
		slices.Sort(st.UnscheduledPods)
	}
	return st, true, nil
}

// candidateVolumes are the cached volumes that can matter to claim: the
// one it names, those claimed for it and the unclaimed ones, by name. A
// volume claimed for another claim never binds to it.
func (r *run) candidateVolumes(claim *corev1.PersistentVolumeClaim) ([]*corev1.PersistentVolume, error) {
	var out []*corev1.PersistentVolume
	seen := map[string]bool{}
	addAll := func(objs []any) {
		for _, obj := range objs {
			if pv, ok := obj.(*corev1.PersistentVolume); ok && !seen[pv.Name] {
				seen[pv.Name] = true
				out = append(out, pv)
			}
		}
	}
	for _, key := range []string{claimindex.Key(claim.Namespace, claim.Name), claimindex.Unclaimed} {
		objs, err := r.volumeIndex.ByIndex(claimindex.Volumes, key)
		if err != nil {
			return nil, err
		}
		addAll(objs)
	}
	if name := claim.Spec.VolumeName; name != "" && !seen[name] {
		pv, err := r.volumes.Get(name)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if pv != nil {
			out = append(out, pv)
		}
	}
	return out, nil
}

func (r *run) syncClaim(ctx context.Context, key string) (reconcile.Result, error) {
	st, ok, err := r.observeClaim(key)
	if !ok || err != nil {
		return reconcile.Result{}, err
	}
	p := planClaim(st)
	claim := st.Claim
	if p.Event != nil && p.Action != ClaimLost {
		r.rec.Event(claim, p.Event.Type, p.Event.Reason, p.Event.Message)
	}
	switch p.Action {
	case ClaimPending:
		return reconcile.Result{}, r.setClaimPhase(ctx, claim, corev1.ClaimPending, nil)
	case ClaimLost:
		if claim.Status.Phase != corev1.ClaimLost && p.Event != nil {
			r.rec.Event(claim, p.Event.Type, p.Event.Reason, p.Event.Message)
		}
		return reconcile.Result{}, r.setClaimPhase(ctx, claim, corev1.ClaimLost, nil)
	case ClaimProvision:
		annotated, changed := provisionerAnnotated(claim, p.Provisioner)
		if changed {
			if _, err := r.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, annotated, metav1.UpdateOptions{}); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{}, nil
	case ClaimBind:
		return reconcile.Result{}, r.bind(ctx, p.Volume, claim)
	case ClaimAssignClass:
		out := claim.DeepCopy()
		out.Spec.StorageClassName = &p.ClassName
		if _, err := r.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, out, metav1.UpdateOptions{}); err != nil {
			return reconcile.Result{}, err
		}
		r.log.Info("assigned the default StorageClass", "claim", claim.Namespace+"/"+claim.Name, "class", p.ClassName)
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, p.Err
}

// bind writes the volume's side first (so that a second claim racing for
// it loses on the volume's resourceVersion), then the claim's.
func (r *run) bind(ctx context.Context, pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	pvs := r.Client.CoreV1().PersistentVolumes()
	out, changed, statusChanged := boundVolume(pv, claim)
	if changed {
		updated, err := pvs.Update(ctx, out, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("binding volume %s to claim %s/%s: %w", pv.Name, claim.Namespace, claim.Name, err)
		}
		statusChanged = updated.Status.Phase != corev1.VolumeBound
		updated.Status.Phase = corev1.VolumeBound
		out = updated
	}
	if statusChanged {
		if _, err := pvs.UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if changed || statusChanged {
		r.log.Debug("volume bound", "volume", pv.Name, "claim", claim.Namespace+"/"+claim.Name)
	}
	claims := r.Client.CoreV1().PersistentVolumeClaims(claim.Namespace)
	cout, changed, statusChanged := boundClaim(claim, pv)
	if changed {
		updated, err := claims.Update(ctx, cout, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("binding claim %s/%s to volume %s: %w", claim.Namespace, claim.Name, pv.Name, err)
		}
		statusChanged = setClaimStatus(updated, corev1.ClaimBound, pv)
		cout = updated
	}
	if statusChanged {
		if _, err := claims.UpdateStatus(ctx, cout, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) setClaimPhase(ctx context.Context, claim *corev1.PersistentVolumeClaim, p corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume) error {
	out := claim.DeepCopy()
	if !setClaimStatus(out, p, pv) {
		return nil
	}
	_, err := r.Client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ---- volumes ----

// observeVolume finds the claim a volume's claimRef names. A claim
// missing from the cache (or there with another UID) is asked of the API
// server before a volume that is not yet Released counts as released: a
// claim just created may not be in the cache yet.
func (r *run) observeVolume(ctx context.Context, name string) (VolumeState, bool, error) {
	pv, err := r.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return VolumeState{}, false, nil
	}
	if err != nil {
		return VolumeState{}, false, err
	}
	st := VolumeState{Volume: pv}
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		return st, true, nil
	}
	claim, err := r.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return VolumeState{}, false, err
	}
	if claim == nil || claim.UID != ref.UID {
		if pv.Status.Phase == corev1.VolumeReleased || pv.Status.Phase == corev1.VolumeFailed {
			return st, true, nil
		}
		live, err := r.Client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return VolumeState{}, false, err
		}
		claim = nil
		if err == nil && live.UID == ref.UID {
			claim = live
		}
	}
	st.Claim = claim
	return st, true, nil
}

func (r *run) syncVolume(ctx context.Context, name string) (reconcile.Result, error) {
	st, ok, err := r.observeVolume(ctx, name)
	if !ok || err != nil {
		return reconcile.Result{}, err
	}
	p := planVolume(st)
	pv := st.Volume
	pvs := r.Client.CoreV1().PersistentVolumes()
	switch p.Action {
	case VolumeSyncClaim:
		ref := pv.Spec.ClaimRef
		r.queue.Add(claimPrefix + ref.Namespace + "/" + ref.Name)
		return reconcile.Result{}, nil
	case VolumeUnbind:
		updated, err := pvs.Update(ctx, unboundVolume(pv), metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, err
		}
		if updated.Status.Phase != corev1.VolumeAvailable {
			updated.Status.Phase = corev1.VolumeAvailable
			_, err = pvs.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		}
		return reconcile.Result{}, err
	case VolumePhase, VolumeDelete:
		if p.Phase != "" && p.Phase != pv.Status.Phase {
			out := pv.DeepCopy()
			out.Status.Phase = p.Phase
			updated, err := pvs.UpdateStatus(ctx, out, metav1.UpdateOptions{})
			if err != nil {
				return reconcile.Result{}, err
			}
			pv = updated
		}
		if p.Event != nil {
			r.rec.Event(pv, p.Event.Type, p.Event.Reason, p.Event.Message)
		}
		if p.Action == VolumeDelete {
			uid := pv.UID
			err := pvs.Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, err
			}
			r.log.Info("deleted released volume", "volume", pv.Name)
		}
	}
	if p.Action == VolumeNone && p.Event != nil {
		r.rec.Event(pv, p.Event.Type, p.Event.Reason, p.Event.Message)
	}
	return reconcile.Result{}, nil
}
