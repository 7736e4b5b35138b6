// Package node is upstream's Node authorizer: what a node identity
// (system:node:<name> in system:nodes) may do. A Graph, fed by the API
// server's informers over pods and PersistentVolumes, relates each node
// to the Secrets, ConfigMaps, PersistentVolumeClaims, PersistentVolumes,
// ServiceAccounts and ResourceClaims its pods use, so that a node reads
// only those and asks tokens only for its pods' ServiceAccounts; its own
// Node, Lease and CSINode it may reach by name; the local-path volumes
// whose folder it holds (package localpath) it may watch, by their label,
// and update; the rest is upstream's
// system:node rules. Every decision is a few map lookups. The
// NodeRestriction admission plugin narrows the writes it allows (Node,
// pod status, mirror pods) to the node's own objects.
package node
