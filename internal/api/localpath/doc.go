// Package localpath holds what the parts of plainkube's built-in
// local-path provisioner agree on: the provisioner's and StorageClass's
// names, the Node annotation giving a node's local-path folder, the label
// and finalizer on the PersistentVolumes whose folder a node must remove,
// and the naming of those folders. The provisioner controller, the node
// agent, the Node authorizer and the NodeRestriction admission plugin
// import it; none of them imports another.
package localpath
