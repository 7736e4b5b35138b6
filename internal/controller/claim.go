package controller

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
