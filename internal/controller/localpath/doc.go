// Package localpath is plainkube's built-in local-path provisioner (as
// k3s ships one): it makes a PersistentVolume for each claim of a
// StorageClass whose provisioner is plainkube.dev/local-path (the default
// class "local-path", which the server creates) once the scheduler has
// picked the claim's node.
//
// The flow, every step a write to the API server and a watch event to the
// next component (docs/architecture.md, rule 1):
//
//  1. The class binds WaitForFirstConsumer: the persistentvolume binder
//     leaves the claim Pending until the scheduler, placing a pod that
//     uses it, writes the node it chose into the claim's
//     volume.kubernetes.io/selected-node annotation; the binder then
//     hands the claim to the provisioner (the
//     volume.kubernetes.io/storage-provisioner annotation).
//  2. This controller creates PV pvc-<claim uid>: hostPath
//     <dir>/pvc-<uid>_<namespace>_<claim> (DirectoryOrCreate, made by the
//     node agent when a pod mounts it), where <dir> is the node's
//     plainkube.dev/local-path-dir annotation (published by real node
//     agents at registration: <data dir>/storage); node affinity to that
//     node's kubernetes.io/hostname; the claim's size, access modes and
//     volume mode; the class's reclaim policy and mount options; a claimRef
//     to the claim (pre-bound, so the binder binds the two); annotation
//     pv.kubernetes.io/provisioned-by: plainkube.dev/local-path. A node
//     without the annotation (a simulated one) gets a volume with no
//     folder behind it (under /var/lib/plainkube/storage, which nothing
//     creates) and no cleanup.
//  3. A volume with a folder is labelled plainkube.dev/local-path-node:
//     <node> and carries the finalizer plainkube.dev/local-path-cleanup.
//     When its claim is deleted and the reclaim policy is Delete, the
//     binder deletes the volume; the node agent of that node, which
//     watches only the volumes labelled for it, removes the folder (only
//     a pvc-* folder directly inside its own local-path folder) and then
//     the finalizer, and the volume goes. The Node authorizer lets a node
//     list and watch volumes only with that label selector naming itself,
//     and update only volumes so labelled; NodeRestriction lets the
//     update remove the cleanup finalizer and change nothing else.
//  4. If the node is deleted, its folders went with it: this controller
//     removes the finalizer of its volumes being deleted.
//
// What to create is decided by volumeFor (plan.go, table-tested).
package localpath
