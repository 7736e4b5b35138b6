package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Claim is what a controller does with an object its selector may cover.
type Claim int

const (
	// IgnoreObject: controlled by someone else, or an orphan the controller
	// may not take.
	IgnoreObject Claim = iota
	// KeepObject: controlled by the controller and still matching.
	KeepObject
	// AdoptObject: a matching orphan; make the controller its controller.
	AdoptObject
	// ReleaseObject: controlled by the controller but no longer matching.
	ReleaseObject
)

// DecideClaim is upstream's ControllerRefManager.ClaimObject decision for
// obj given whether the owner's selector matches it. A controller being
// deleted neither adopts nor releases; an object being deleted is not
// adopted.
func DecideClaim(owner, obj metav1.Object, matches bool) Claim {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		switch {
		case ref.UID != owner.GetUID():
			return IgnoreObject
		case matches:
			return KeepObject
		case owner.GetDeletionTimestamp() != nil:
			return IgnoreObject
		default:
			return ReleaseObject
		}
	}
	if owner.GetDeletionTimestamp() != nil || !matches || obj.GetDeletionTimestamp() != nil ||
		owner.GetNamespace() != obj.GetNamespace() {
		return IgnoreObject
	}
	return AdoptObject
}

// AdoptPatch is the strategic merge patch that makes owner obj's controller
// (with uid as a precondition on the patched object).
func AdoptPatch(gvk schema.GroupVersionKind, owner metav1.Object, objUID types.UID) []byte {
	ref := metav1.NewControllerRef(owner, gvk)
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*ref},
		"uid":             objUID,
	}})
	return b
}

// ReleasePatch is the strategic merge patch that removes owner's reference
// from the object.
func ReleasePatch(ownerUID, objUID types.UID) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]any{{"$patch": "delete", "uid": ownerUID}},
		"uid":             objUID,
	}})
	return b
}

// PodClaimer adopts and releases the pods of one owner, as upstream's
// ControllerRefManager does for a workload controller.
type PodClaimer struct {
	Pods  corev1client.PodsGetter
	Owner metav1.Object
	Kind  schema.GroupVersionKind
	// Selector is the owner's pod selector.
	Selector labels.Selector
	// CanAdopt, if set, filters the orphans the owner may take (a
	// StatefulSet only takes pods named after it).
	CanAdopt func(*corev1.Pod) bool
	// Recheck reads the owner afresh and reports whether it may still adopt
	// (it exists with the same UID and is not being deleted); it is called
	// once, before the first adoption.
	Recheck func(ctx context.Context) bool
}

// Claim adopts matching orphans, releases pods that stopped matching, and
// returns the pods the owner controls.
func (c PodClaimer) Claim(ctx context.Context, all []*corev1.Pod) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	var errs []error
	var adoptOK *bool
	for _, p := range all {
		switch DecideClaim(c.Owner, p, c.Selector.Matches(labels.Set(p.Labels))) {
		case KeepObject:
			out = append(out, p)
		case AdoptObject:
			if c.CanAdopt != nil && !c.CanAdopt(p) {
				continue
			}
			if adoptOK == nil {
				ok := c.Recheck == nil || c.Recheck(ctx)
				adoptOK = &ok
			}
			if !*adoptOK {
				continue
			}
			_, err := c.Pods.Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType,
				AdoptPatch(c.Kind, c.Owner, p.UID), metav1.PatchOptions{})
			if err != nil {
				if !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
				continue
			}
			out = append(out, p)
		case ReleaseObject:
			_, err := c.Pods.Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType,
				ReleasePatch(c.Owner.GetUID(), p.UID), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
				errs = append(errs, err)
			}
		}
	}
	return out, utilerrors.NewAggregate(errs)
}

// RecheckOwner says whether an owner may adopt, given the owner as the
// cache has it and as read afresh (or the error of that read): the cache
// may be stale, and an owner deleted, or replaced by another of the same
// name, adopts nothing. It is upstream's RecheckDeletionTimestamp check.
func RecheckOwner(kind string, cached, fresh metav1.Object, err error) error {
	switch {
	case err != nil:
		return err
	case fresh.GetUID() != cached.GetUID():
		return fmt.Errorf("original %s %s/%s is gone: got uid %s, wanted %s", kind, cached.GetNamespace(), cached.GetName(), fresh.GetUID(), cached.GetUID())
	case fresh.GetDeletionTimestamp() != nil:
		return fmt.Errorf("%s/%s has just been deleted at %v", cached.GetNamespace(), cached.GetName(), fresh.GetDeletionTimestamp())
	}
	return nil
}
