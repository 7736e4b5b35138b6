// Package volumes is the node agent's volume manager: it makes each
// volume of a pod a directory on the node before the pod's sandbox
// starts, keeps those whose content comes from the API up to date, and
// removes them when the pod is gone.
//
// The agent (internal/kubelet) drives one Manager from its pod sync:
// Setup until it succeeds (meanwhile the pod waits, its containers
// ContainerCreating, with FailedMount events), OverLimit to evict a pod
// whose emptyDir outgrows its sizeLimit, Cleanup and CleanupOrphans when
// pods stop. The runtime gets the volumes as bind mounts (ContainerMounts,
// with subPath and subPathExpr).
//
// The volume types are emptyDir (disk or tmpfs), hostPath,
// persistentVolumeClaim (resolved through the API to the hostPath or
// local PersistentVolume it is bound to; Block volumes are refused),
// configMap, secret, downwardAPI and projected (with service account
// tokens from the TokenRequest API), whose files the atomic writer
// (package atomicwriter) swaps in at once, and image (an image's root
// file system mounted read-only from the node's containerd, through
// Config.Images). What files a volume holds is computed purely from the
// objects read (payloads); only the manager reads the API.
package volumes
