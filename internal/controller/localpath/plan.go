package localpath

import (
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/api/localpath"
)

// Claim annotations the provisioner reads, as upstream's.
const (
	annSelectedNode       = "volume.kubernetes.io/selected-node"
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	annBindCompleted      = "pv.kubernetes.io/bind-completed"
)

// wants reports whether claim waits for this provisioner to make its
// volume on a chosen node.
func wants(claim *corev1.PersistentVolumeClaim) bool {
	_, bound := claim.Annotations[annBindCompleted]
	return claim.Annotations[annStorageProvisioner] == localpath.Provisioner && claim.Annotations[annSelectedNode] != "" &&
		claim.Spec.VolumeName == "" && !bound && claim.DeletionTimestamp == nil
}

// volumeFor is the volume to make for claim of class on node, or why
// there is none (in the words of the ProvisioningFailed event).
func volumeFor(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, node *corev1.Node) (*corev1.PersistentVolume, string) {
	switch {
	case class.Provisioner != localpath.Provisioner:
		return nil, fmt.Sprintf("storage class %q is not provisioned by %s", class.Name, localpath.Provisioner)
	case claim.Spec.Selector != nil:
		return nil, "claim Selector is not supported"
	case claim.Spec.DataSource != nil || claim.Spec.DataSourceRef != nil:
		return nil, fmt.Sprintf("%s does not support data sources", localpath.Provisioner)
	}
	size, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil, "claim has no storage request"
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	dir, hasDir := node.Annotations[localpath.NodeDirAnnotation]
	if hasDir && !filepath.IsAbs(dir) {
		return nil, fmt.Sprintf("node %q has a local-path folder that is not absolute: %q", node.Name, dir)
	}
	base := dir
	if !hasDir {
		base = localpath.SimulatedDir
	}
	hostname := node.Labels[corev1.LabelHostname]
	if hostname == "" {
		hostname = node.Name
	}
	pathType := corev1.HostPathDirectoryOrCreate
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        localpath.VolumeName(claim),
			Annotations: map[string]string{localpath.ProvisionedByAnnotation: localpath.Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   claim.Spec.AccessModes,
			VolumeMode:                    claim.Spec.VolumeMode,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: filepath.Join(base, localpath.FolderName(claim)), Type: &pathType}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}},
			}}}},
		},
	}
	if hasDir {
		pv.Labels = map[string]string{localpath.NodeLabel: node.Name}
		pv.Finalizers = []string{localpath.CleanupFinalizer}
	}
	return pv, ""
}

// orphaned reports whether pv, being deleted, waits for the cleanup of a
// node that no longer exists (nodeExists false): its finalizer is to go.
func orphaned(pv *corev1.PersistentVolume, nodeExists bool) bool {
	if pv.DeletionTimestamp == nil || nodeExists || pv.Annotations[localpath.ProvisionedByAnnotation] != localpath.Provisioner {
		return false
	}
	for _, f := range pv.Finalizers {
		if f == localpath.CleanupFinalizer {
			return pv.Labels[localpath.NodeLabel] != ""
		}
	}
	return false
}

// labelsFor selects the volumes whose folder is on node.
func labelsFor(node string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{localpath.NodeLabel: node})
}
