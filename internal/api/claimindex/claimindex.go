package claimindex

import (
	corev1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/api/podutil"
)

// Index names.
const (
	// Pods indexes pods by the claims their volumes use (PodsByClaim).
	Pods = "plainkube.dev/pods-by-claim"
	// Volumes indexes volumes by the claim their claimRef names, the
	// unclaimed ones under Unclaimed (VolumesByClaim).
	Volumes = "plainkube.dev/volumes-by-claim"
)

// Unclaimed is the Volumes key of volumes without a claimRef.
const Unclaimed = "-"

// Key is the index key of a claim: namespace/name.
func Key(namespace, name string) string { return namespace + "/" + name }

// PodsByClaim is a cache.IndexFunc: the keys of the claims a pod uses.
func PodsByClaim(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, name := range podutil.ClaimNames(pod) {
		keys = append(keys, Key(pod.Namespace, name))
	}
	return keys, nil
}

// VolumesByClaim is a cache.IndexFunc: the key of the claim a volume is
// claimed for, or Unclaimed.
func VolumesByClaim(obj any) ([]string, error) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return nil, nil
	}
	if ref := pv.Spec.ClaimRef; ref != nil {
		return []string{Key(ref.Namespace, ref.Name)}, nil
	}
	return []string{Unclaimed}, nil
}
