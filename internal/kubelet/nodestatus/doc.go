// Package nodestatus holds the parts of a Node's status that every node
// agent reports the same way, real (internal/kubelet) or simulated
// (internal/kubelet/sim).
package nodestatus
