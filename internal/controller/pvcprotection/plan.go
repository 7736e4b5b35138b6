package pvcprotection

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/api/podutil"
)

// Finalizer is the claim's protection finalizer, as upstream's.
const Finalizer = "kubernetes.io/pvc-protection"

// Action is what to do with a claim's finalizer.
type Action int

const (
	None Action = iota
	// Add the finalizer: the claim lacks it and is not being deleted.
	Add
	// Check the API server's pods, since the cache shows none using the
	// claim: the finalizer goes if none does there either.
	Check
)

// plan decides for a claim given whether a pod in the cache uses it.
func plan(claim *corev1.PersistentVolumeClaim, usedInCache bool) Action {
	has := slices.Contains(claim.Finalizers, Finalizer)
	switch {
	case claim.DeletionTimestamp == nil && !has:
		return Add
	case claim.DeletionTimestamp != nil && has && !usedInCache:
		return Check
	}
	return None
}

// podUses reports whether pod keeps claim from being deleted, as
// upstream's rule: the pod is scheduled and names the claim directly, or
// through an ephemeral volume whose claim it owns and it has not shut
// down.
func podUses(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	if pod.Namespace != claim.Namespace || pod.Spec.NodeName == "" {
		return false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if name, ok := podutil.ClaimName(pod, v); !ok || name != claim.Name {
			continue
		}
		if v.PersistentVolumeClaim != nil || !shutDown(pod) && ownedBy(claim, pod) {
			return true
		}
	}
	return false
}

// shutDown: the node agent is done with the pod (deleted with grace 0),
// or it was force-deleted.
func shutDown(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

func ownedBy(claim *corev1.PersistentVolumeClaim, pod *corev1.Pod) bool {
	ref := metav1.GetControllerOfNoCopy(claim)
	return ref != nil && ref.UID == pod.UID
}
