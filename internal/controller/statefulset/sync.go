package statefulset

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/controller"
	"plainkube.dev/plainkube/internal/controller/history"
	"plainkube.dev/plainkube/internal/reconcile"
)

var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Pod labels upstream sets (besides controller-revision-hash).
const (
	PodNameLabel  = appsv1.StatefulSetPodNameLabel // statefulset.kubernetes.io/pod-name
	PodIndexLabel = appsv1.PodIndexLabel           // apps.kubernetes.io/pod-index
)

func (c *Controller) sync(ctx context.Context, key string) (reconcile.Result, error) {
	res, err := c.syncSet(ctx, key)
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		// The cache was behind: look again shortly.
		return reconcile.Result{Requeue: true}, nil
	}
	return res, err
}

func (c *Controller) syncSet(ctx context.Context, key string) (reconcile.Result, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return reconcile.Result{}, nil
	}
	set, err := c.sets.StatefulSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || sel.Empty() {
		c.log.Error("invalid selector; not syncing", "namespace", namespace, "name", name)
		return reconcile.Result{}, nil
	}
	if set.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	all, err := c.pods.Pods(namespace).List(labels.Everything())
	if err != nil {
		return reconcile.Result{}, err
	}
	pods, err := c.claimPods(ctx, set, sel, all)
	if err != nil {
		return reconcile.Result{}, err
	}
	current, update, collision, err := c.syncRevisions(ctx, set, pods)
	if err != nil {
		return reconcile.Result{}, err
	}
	in := State{SetName: set.Name, Replicas: int(replicasOf(set)), Parallel: set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement,
		RollingUpdate:   set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType,
		CurrentRevision: current.Name, UpdateRevision: update.Name, MinReadySeconds: set.Spec.MinReadySeconds,
		Pods: pods, Now: c.now()}
	if set.Spec.Ordinals != nil {
		in.Start = int(set.Spec.Ordinals.Start)
	}
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		in.Partition = int(*ru.Partition)
	}
	acts := plan(in)
	manageErr := c.apply(ctx, set, acts, map[string]*appsv1.ControllerRevision{current.Name: current, update.Name: update})
	if err := c.syncClaimOwners(ctx, set, pods); err != nil && manageErr == nil {
		manageErr = err
	}
	st := ComputeStatus(set, pods, current.Name, update.Name, c.now())
	st.CollisionCount = collision
	var res reconcile.Result
	if set.Spec.MinReadySeconds > 0 && st.ReadyReplicas != st.AvailableReplicas {
		res.RequeueAfter = time.Duration(set.Spec.MinReadySeconds)*time.Second + time.Second
	}
	if err := c.writeStatus(ctx, set, st); err != nil {
		return res, err
	}
	return res, manageErr
}

func replicasOf(set *appsv1.StatefulSet) int32 {
	if set.Spec.Replicas == nil {
		return 1
	}
	return *set.Spec.Replicas
}

func (c *Controller) apply(ctx context.Context, set *appsv1.StatefulSet, acts []Action, revs map[string]*appsv1.ControllerRevision) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, a := range acts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			switch a.Type {
			case Create:
				err = c.createPod(ctx, set, a.Ordinal, revs[a.Revision])
			case Delete:
				err = c.deletePod(ctx, set, a.Pod, a.Ordinal >= int(replicasOf(set))+startOf(set) || a.Ordinal < startOf(set))
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return utilerrors.NewAggregate(errs)
}

func startOf(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals == nil {
		return 0
	}
	return int(set.Spec.Ordinals.Start)
}

// NewPod is the pod of ordinal for set built from template on revision:
// its stable name, hostname and subdomain, identity labels, and volumes
// for the set's claims.
func NewPod(set *appsv1.StatefulSet, template *corev1.PodTemplateSpec, ordinal int, revision string) *corev1.Pod {
	t := template.DeepCopy()
	name := PodName(set.Name, ordinal)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: set.Namespace, Labels: map[string]string{},
			Annotations: t.Annotations, OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, controllerKind)}},
		Spec: t.Spec,
	}
	for k, v := range t.Labels {
		pod.Labels[k] = v
	}
	pod.Labels[PodNameLabel] = name
	pod.Labels[PodIndexLabel] = strconv.Itoa(ordinal)
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = set.Spec.ServiceName
	for _, ct := range set.Spec.VolumeClaimTemplates {
		vol := corev1.Volume{Name: ct.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: ClaimName(ct.Name, set.Name, ordinal)}}}
		replaced := false
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == ct.Name {
				pod.Spec.Volumes[i] = vol
				replaced = true
			}
		}
		if !replaced {
			pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
		}
	}
	return pod
}

// ClaimName is the claim of template claim for the set's pod of ordinal.
func ClaimName(claim, set string, ordinal int) string {
	return claim + "-" + PodName(set, ordinal)
}

func retention(set *appsv1.StatefulSet) (whenDeleted, whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType) {
	whenDeleted, whenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		if p.WhenDeleted != "" {
			whenDeleted = p.WhenDeleted
		}
		if p.WhenScaled != "" {
			whenScaled = p.WhenScaled
		}
	}
	return whenDeleted, whenScaled
}

func (c *Controller) createPod(ctx context.Context, set *appsv1.StatefulSet, ordinal int, rev *appsv1.ControllerRevision) error {
	template := &set.Spec.Template
	if rev != nil {
		if t, err := history.TemplateFromRevision(rev); err == nil {
			template = t
		}
	}
	revName := ""
	if rev != nil {
		revName = rev.Name
	}
	pod := NewPod(set, template, ordinal, revName)
	if err := c.createClaims(ctx, set, pod, ordinal); err != nil {
		return err
	}
	_, err := c.Client.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return err
		}
		c.rec.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "create Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err)
		return err
	}
	c.log.Debug("created pod", "namespace", set.Namespace, "name", set.Name, "pod", pod.Name)
	c.rec.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate", "create Pod %s in StatefulSet %s successful", pod.Name, set.Name)
	return nil
}

// createClaims makes the pod's claims that do not exist yet; a claim being
// deleted is an error (the pod waits for it to go).
func (c *Controller) createClaims(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, ordinal int) error {
	for _, ct := range set.Spec.VolumeClaimTemplates {
		name := ClaimName(ct.Name, set.Name, ordinal)
		existing, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(name)
		if err == nil {
			if existing.DeletionTimestamp != nil {
				return fmt.Errorf("pvc %s is being deleted", name)
			}
			continue
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: set.Namespace, Labels: map[string]string{},
				Annotations: ct.Annotations},
			Spec: *ct.Spec.DeepCopy(),
		}
		for k, v := range ct.Labels {
			claim.Labels[k] = v
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				claim.Labels[k] = v
			}
		}
		claim.OwnerReferences = ClaimOwners(nil, set, nil, false)
		_, err = c.Client.CoreV1().PersistentVolumeClaims(set.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			c.rec.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "create Claim %s for Pod %s in StatefulSet %s failed error: %v",
				name, pod.Name, set.Name, err)
			return err
		}
		c.rec.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate", "create Claim %s Pod %s in StatefulSet %s success",
			name, pod.Name, set.Name)
	}
	return nil
}

// deletePod deletes pod (with a UID precondition); a pod scaled away
// first has its claims' owners brought in line with whenScaled (under
// Delete the pod controls them, so that the garbage collector removes
// them with it).
func (c *Controller) deletePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, condemned bool) error {
	if condemned {
		if err := c.updateClaimOwners(ctx, set, pod, true); err != nil {
			return err
		}
	}
	err := c.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		c.rec.Eventf(set, corev1.EventTypeWarning, "FailedDelete", "delete Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err)
		return err
	}
	c.log.Debug("deleted pod", "namespace", set.Namespace, "name", set.Name, "pod", pod.Name)
	c.rec.Eventf(set, corev1.EventTypeNormal, "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful", pod.Name, set.Name)
	return nil
}

// ClaimOwners is what a set's claim should be owned by, given its owner
// references now, under the set's retention policy (as upstream): the set
// under whenDeleted: Delete, the claim's pod instead when that pod is
// scaled away under whenScaled: Delete, neither under Retain. References
// to other objects stay; a claim another object controls keeps none to
// the set or pod.
func ClaimOwners(refs []metav1.OwnerReference, set *appsv1.StatefulSet, pod *corev1.Pod, scaledDown bool) []metav1.OwnerReference {
	ours := func(r metav1.OwnerReference) bool {
		return (r.Kind == controllerKind.Kind && r.APIVersion == controllerKind.GroupVersion().String() && r.Name == set.Name) ||
			(pod != nil && r.Kind == "Pod" && r.APIVersion == "v1" && r.Name == pod.Name)
	}
	var out []metav1.OwnerReference
	foreign := false
	for _, r := range refs {
		if ours(r) {
			continue
		}
		foreign = foreign || (r.Controller != nil && *r.Controller)
		out = append(out, r)
	}
	if foreign {
		return out
	}
	whenDeleted, whenScaled := retention(set)
	switch {
	case whenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType && scaledDown && pod != nil:
		out = append(out, *metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod")))
	case whenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		out = append(out, *metav1.NewControllerRef(set, controllerKind))
	}
	return out
}

// updateClaimOwners brings the owner references of pod's claims in line
// with the set's retention policy (ClaimOwners), as upstream does for
// every pod on every sync, so that a policy changed later applies to
// existing claims too.
func (c *Controller) updateClaimOwners(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, scaledDown bool) error {
	ord, ok := Ordinal(set.Name, pod.Name)
	if !ok {
		return nil
	}
	for _, ct := range set.Spec.VolumeClaimTemplates {
		name := ClaimName(ct.Name, set.Name, ord)
		claim, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(name)
		if err != nil || claim.DeletionTimestamp != nil {
			continue
		}
		want := ClaimOwners(claim.OwnerReferences, set, pod, scaledDown)
		if equality.Semantic.DeepEqual(want, claim.OwnerReferences) || (len(want) == 0 && len(claim.OwnerReferences) == 0) {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": want,
			"resourceVersion": claim.ResourceVersion}})
		if _, err := c.Client.CoreV1().PersistentVolumeClaims(set.Namespace).Patch(ctx, name, types.MergePatchType, patch,
			metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// syncClaimOwners runs updateClaimOwners for each of the set's pods.
func (c *Controller) syncClaimOwners(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod) error {
	if len(set.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	start, replicas := startOf(set), int(replicasOf(set))
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		ord, _ := Ordinal(set.Name, p.Name)
		if err := c.updateClaimOwners(ctx, set, p, ord < start || ord >= start+replicas); err != nil {
			errs = append(errs, err)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// claimPods adopts and releases pods per controller.DecideClaim and returns
// those the set controls.
func (c *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector, all []*corev1.Pod) ([]*corev1.Pod, error) {
	return controller.PodClaimer{
		Pods: c.Client.CoreV1(), Owner: set, Kind: controllerKind, Selector: sel,
		CanAdopt: func(p *corev1.Pod) bool { _, ok := Ordinal(set.Name, p.Name); return ok },
		Recheck: func(ctx context.Context) bool {
			fresh, err := c.Client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
			return err == nil && fresh.UID == set.UID && fresh.DeletionTimestamp == nil
		},
	}.Claim(ctx, all)
}

// syncRevisions returns the current and update revisions (creating the
// update revision if the template is new) and the collision count.
func (c *Controller) syncRevisions(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod) (current, update *appsv1.ControllerRevision, collision *int32, err error) {
	collision = set.Status.CollisionCount
	data, err := history.RevisionData(&set.Spec.Template)
	if err != nil {
		return nil, nil, nil, err
	}
	sel, _ := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	all, err := c.revisions.ControllerRevisions(set.Namespace).List(sel)
	if err != nil {
		return nil, nil, nil, err
	}
	var revs []*appsv1.ControllerRevision
	for _, r := range all {
		if metav1.IsControlledBy(r, set) {
			revs = append(revs, r)
		}
	}
	maxRev := history.MaxRevision(revs)
	for _, r := range revs {
		if history.SameRevisionData(r.Data.Raw, data) {
			update = r
			break
		}
	}
	if update != nil && update.Revision < maxRev {
		upd := update.DeepCopy()
		upd.Revision = maxRev + 1
		if update, err = c.Client.AppsV1().ControllerRevisions(set.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return nil, nil, nil, err
		}
	}
	for update == nil {
		hash := history.HashRevision(data, collision)
		lbls := map[string]string{}
		for k, v := range set.Spec.Template.Labels {
			lbls[k] = v
		}
		lbls[appsv1.ControllerRevisionHashLabelKey] = hash
		rev := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: set.Name + "-" + hash, Namespace: set.Namespace, Labels: lbls,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, controllerKind)}},
			Data:     runtime.RawExtension{Raw: data},
			Revision: maxRev + 1,
		}
		created, err := c.Client.AppsV1().ControllerRevisions(set.Namespace).Create(ctx, rev, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			existing, gerr := c.Client.AppsV1().ControllerRevisions(set.Namespace).Get(ctx, rev.Name, metav1.GetOptions{})
			if gerr != nil {
				return nil, nil, nil, gerr
			}
			if metav1.IsControlledBy(existing, set) && history.SameRevisionData(existing.Data.Raw, data) {
				update = existing
				break
			}
			n := int32(1)
			if collision != nil {
				n = *collision + 1
			}
			collision = &n
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		update = created
		revs = append(revs, created)
	}
	for _, r := range revs {
		if r.Name == set.Status.CurrentRevision {
			current = r
		}
	}
	if current == nil {
		current = update
	}
	c.truncateHistory(ctx, set, pods, revs, current, update)
	return current, update, collision, nil
}

func (c *Controller) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revs []*appsv1.ControllerRevision, current, update *appsv1.ControllerRevision) {
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	used := map[string]bool{current.Name: true, update.Name: true}
	for _, p := range pods {
		used[Revision(p)] = true
	}
	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if !used[r.Name] {
			old = append(old, r)
		}
	}
	if len(old) <= limit {
		return
	}
	sort.Slice(old, func(i, j int) bool { return old[i].Revision < old[j].Revision })
	for _, r := range old[:len(old)-limit] {
		if err := c.Client.AppsV1().ControllerRevisions(set.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			c.log.Warn("deleting old revision", "namespace", set.Namespace, "name", set.Name, "revision", r.Name, "err", err)
		}
	}
}

func (c *Controller) writeStatus(ctx context.Context, set *appsv1.StatefulSet, st appsv1.StatefulSetStatus) error {
	s := set.Status
	if s.ObservedGeneration == st.ObservedGeneration && s.Replicas == st.Replicas && s.ReadyReplicas == st.ReadyReplicas &&
		s.CurrentReplicas == st.CurrentReplicas && s.UpdatedReplicas == st.UpdatedReplicas &&
		s.AvailableReplicas == st.AvailableReplicas && s.CurrentRevision == st.CurrentRevision &&
		s.UpdateRevision == st.UpdateRevision && ptrEq(s.CollisionCount, st.CollisionCount) {
		return nil
	}
	upd := set.DeepCopy()
	upd.Status = st
	_, err := c.Client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	return err
}

func ptrEq(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
