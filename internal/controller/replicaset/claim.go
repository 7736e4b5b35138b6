package replicaset

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// claim is what a controller does with an object its selector may cover.
type claim int

const (
	// ignoreObject: controlled by someone else, or an orphan the controller
	// may not take.
	ignoreObject claim = iota
	// keepObject: controlled by the controller and still matching.
	keepObject
	// adoptObject: a matching orphan; make the controller its controller.
	adoptObject
	// releaseObject: controlled by the controller but no longer matching.
	releaseObject
)

// decideClaim is upstream's ControllerRefManager.ClaimObject decision for
// obj given whether the owner's selector matches it. A controller being
// deleted neither adopts nor releases; an object being deleted is not
// adopted.
func decideClaim(owner, obj metav1.Object, matches bool) claim {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		switch {
		case ref.UID != owner.GetUID():
			return ignoreObject
		case matches:
			return keepObject
		case owner.GetDeletionTimestamp() != nil:
			return ignoreObject
		default:
			return releaseObject
		}
	}
	if owner.GetDeletionTimestamp() != nil || !matches || obj.GetDeletionTimestamp() != nil ||
		owner.GetNamespace() != obj.GetNamespace() {
		return ignoreObject
	}
	return adoptObject
}

// adoptPatch is the strategic merge patch that makes owner obj's controller
// (with uid as a precondition on the patched object).
func adoptPatch(gvk schema.GroupVersionKind, owner metav1.Object, objUID types.UID) []byte {
	ref := metav1.NewControllerRef(owner, gvk)
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{*ref},
		"uid":             objUID,
	}})
	return b
}

// releasePatch is the strategic merge patch that removes owner's reference
// from the object.
func releasePatch(ownerUID, objUID types.UID) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]any{{"$patch": "delete", "uid": ownerUID}},
		"uid":             objUID,
	}})
	return b
}
