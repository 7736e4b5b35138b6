// Package podstatus holds the parts of a pod's status that every node
// agent computes the same way, real (internal/kubelet) or simulated
// (internal/kubelet/sim): the phase from the containers' states, how a
// condition is set (its transition time kept unless its status changes),
// and an in-place resize's decision (Deferred when it does not fit) and
// report (the containers' allocatedResources and resources).
package podstatus
