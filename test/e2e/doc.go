// Package e2e runs the real plainkube binary and the real kubectl against
// it, as a user would: `plainkube server` in a fresh data dir with embedded
// etcd, then kubectl commands with KUBECONFIG pointing at admin.kubeconfig.
package e2e
