// Package localpath is the node agent's side of plainkube's local-path
// provisioner (see internal/controller/localpath): it removes the folders
// of the node's local-path volumes once they are deleted.
//
// The agent publishes its local-path folder (<data dir>/storage) as the
// Node's plainkube.dev/local-path-dir annotation; the provisioner labels
// each volume whose folder is on the node plainkube.dev/local-path-node:
// <node> and gives it the finalizer plainkube.dev/local-path-cleanup.
// The Cleaner watches only the volumes so labelled (the Node authorizer
// allows a node no other list), and for one being deleted removes its
// folder, if it is a pvc-* folder directly inside the node's own
// local-path folder (a volume naming any other path keeps its path: only
// the finalizer goes), then the finalizer, which lets the volume go.
package localpath
