// Package server assembles a plainkube control plane: certificates, storage
// (embedded etcd, an external etcd cluster, or memory), the API server on
// HTTPS, and the bootstrap that creates what every cluster has (the system
// namespaces, the `kubernetes` Service and its endpoints). It is what
// `plainkube server` runs, and what tests start in-process.
package server
