// Package podstatus holds the parts of a pod's status that every node
// agent computes the same way, real (internal/kubelet) or simulated
// (internal/kubelet/sim).
package podstatus
