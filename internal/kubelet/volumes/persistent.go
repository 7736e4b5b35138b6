package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// PersistentVolumeClaim volumes. A claim is resolved through the API to
// the volume it is bound to (as upstream's volume manager does, with its
// messages while it is not bound); the node agent mounts hostPath and
// local volumes, whose data stays on the node when the pod goes. The
// container gets the volume's path as a bind mount like any other
// volume (subPath, subPathExpr and readOnly alike).

// localPathProvisioner is the built-in provisioner's name; its hostPath
// volumes' folders are made world-writable, as k3s's local-path
// provisioner makes them, so that containers of any user can write.
const localPathProvisioner = "plainkube.dev/local-path"

const annProvisionedBy = "pv.kubernetes.io/provisioned-by"

// claimError is upstream's message for a claim that cannot be used (yet).
type claimError struct {
	Volume, Namespace, Claim string
	Err                      error
}

func (e *claimError) Error() string {
	return fmt.Sprintf("error processing PVC %s/%s: %v", e.Namespace, e.Claim, e.Err)
}

// claimedVolume resolves the claim of pod's volume v to its bound PersistentVolume, with
// upstream's errors while it cannot be used.
func claimedVolume(pod *corev1.Pod, v *corev1.Volume, objs volumeObjects) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume, error) {
	claimName := v.PersistentVolumeClaim.ClaimName
	fail := func(err error) error { return &claimError{v.Name, pod.Namespace, claimName, err} }
	claim, err := objs.Claim(claimName)
	if err != nil {
		return nil, nil, fail(fmt.Errorf("failed to fetch PVC from API server: %w", err))
	}
	if claim.DeletionTimestamp != nil {
		return nil, nil, fail(errors.New("PVC is being deleted"))
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.VolumeName == "" {
		return nil, nil, fail(errors.New("PVC is not bound"))
	}
	pv, err := objs.Volume(claim.Spec.VolumeName)
	if err != nil {
		return nil, nil, fail(fmt.Errorf("failed to fetch PV %s from API server: %w", claim.Spec.VolumeName, err))
	}
	if pv.Spec.ClaimRef == nil {
		return nil, nil, fail(fmt.Errorf("found PV object %s but it has a nil or empty ClaimRef", pv.Name))
	}
	if pv.Spec.ClaimRef.UID != claim.UID {
		return nil, nil, fail(fmt.Errorf("found PV object %s but its ClaimRef UID %s does not point to PVC %s/%s (UID: %s)",
			pv.Name, pv.Spec.ClaimRef.UID, claim.Namespace, claim.Name, claim.UID))
	}
	return claim, pv, nil
}

// errBlockVolume is why a claim of volumeMode Block is refused.
var errBlockVolume = errors.New("volumeMode Block is not supported by plainkube's node agent: only file system volumes (volumeMode Filesystem) can be used")

// setupPersistentVolume makes pv ready to be bind-mounted and returns its
// path on the node: a hostPath volume's path (type checks and creation
// as for a hostPath volume; a local-path volume's new folder world
// writable), or a local volume's path, which must exist, with the pod's
// fsGroup ownership applied as upstream's kubelet does for local volumes
// (not for hostPath ones, nor read-only mounts).
func setupPersistentVolume(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, readOnly bool) (string, error) {
	if (claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock) ||
		(pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock) {
		return "", errBlockVolume
	}
	switch {
	case pv.Spec.HostPath != nil:
		hp := pv.Spec.HostPath
		_, statErr := os.Stat(hp.Path)
		if err := setupHostPath(hp); err != nil {
			return "", err
		}
		if errors.Is(statErr, fs.ErrNotExist) && pv.Annotations[annProvisionedBy] == localPathProvisioner {
			if err := os.Chmod(hp.Path, 0o777); err != nil {
				return "", err
			}
		}
		return hp.Path, nil
	case pv.Spec.Local != nil:
		p := pv.Spec.Local.Path
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("local volume %s: %w", pv.Name, err)
		}
		if fi.IsDir() && !readOnly {
			if err := setLocalOwnership(p, pod); err != nil {
				return "", err
			}
		}
		return p, nil
	}
	return "", fmt.Errorf("persistentvolume %q: plainkube's node agent mounts hostPath and local volumes only", pv.Name)
}

// setLocalOwnership applies the pod's fsGroup to a local volume, unless
// its fsGroupChangePolicy is OnRootMismatch and the volume's root already
// has the group and permissions (as upstream).
func setLocalOwnership(dir string, pod *corev1.Pod) error {
	gid := fsGroup(pod)
	if gid == nil {
		return nil
	}
	sc := pod.Spec.SecurityContext
	if sc.FSGroupChangePolicy != nil && *sc.FSGroupChangePolicy == corev1.FSGroupChangeOnRootMismatch {
		var st syscall.Stat_t
		fi, err := os.Stat(dir)
		if err == nil && syscall.Stat(dir, &st) == nil && int64(st.Gid) == *gid &&
			fi.Mode()&fs.ModeSetgid != 0 && fi.Mode().Perm()&0o070 == 0o070 {
			return nil
		}
	}
	return setOwnership(dir, gid, false)
}
