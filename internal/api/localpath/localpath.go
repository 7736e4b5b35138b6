package localpath

import (
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// Provisioner is the provisioner name of the built-in StorageClass.
	Provisioner = "plainkube.dev/local-path"
	// StorageClassName is the built-in StorageClass, made at server start.
	StorageClassName = "local-path"
	// NodeDirAnnotation on a Node is the absolute folder under which that
	// node keeps the folders of its local-path volumes. A node without it
	// (a simulated one) gets volumes with no folder behind them.
	NodeDirAnnotation = "plainkube.dev/local-path-dir"
	// NodeLabel on a provisioned PersistentVolume names the node that holds
	// its folder: that node's agent watches the volumes so labelled.
	NodeLabel = "plainkube.dev/local-path-node"
	// CleanupFinalizer on a provisioned PersistentVolume with a folder is
	// removed by the node of NodeLabel once it has removed the folder.
	CleanupFinalizer = "plainkube.dev/local-path-cleanup"
	// SimulatedDir is the folder a volume on a node without
	// NodeDirAnnotation names: nothing creates or removes it.
	SimulatedDir = "/var/lib/plainkube/storage"

	// DefaultClassAnnotation marks the cluster's default StorageClass.
	DefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"
	// ProvisionedByAnnotation names the provisioner of a PersistentVolume
	// (upstream's pv.kubernetes.io/provisioned-by).
	ProvisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
)

// FolderName is the folder of claim's volume inside a node's local-path
// folder: pvc-<uid>_<namespace>_<name>, as k3s's provisioner names it.
func FolderName(claim *corev1.PersistentVolumeClaim) string {
	return "pvc-" + string(claim.UID) + "_" + claim.Namespace + "_" + claim.Name
}

// VolumeName is the PersistentVolume provisioned for claim.
func VolumeName(claim *corev1.PersistentVolumeClaim) string {
	return "pvc-" + string(claim.UID)
}

// FolderIn reports whether path is a folder the provisioner may have made
// directly inside dir: an absolute, clean path one level below dir whose
// name starts with "pvc-". A node removes no other.
func FolderIn(dir, path string) bool {
	if dir == "" || !filepath.IsAbs(dir) || !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return false
	}
	parent, name := filepath.Split(path)
	return filepath.Clean(parent) == filepath.Clean(dir) && strings.HasPrefix(name, "pvc-") && name != "pvc-"
}

// StorageClass is the built-in default StorageClass: provisioner
// Provisioner, WaitForFirstConsumer, reclaim Delete.
func StorageClass() *storagev1.StorageClass {
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := corev1.PersistentVolumeReclaimDelete
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: StorageClassName, Annotations: map[string]string{DefaultClassAnnotation: "true"}},
		Provisioner:       Provisioner,
		VolumeBindingMode: &wait,
		ReclaimPolicy:     &reclaim,
	}
}
