// Package nodeunschedulable is the NodeUnschedulable filter: a node with
// spec.unschedulable (cordoned) takes no new pods, unless the pod
// tolerates the node.kubernetes.io/unschedulable:NoSchedule taint.
package nodeunschedulable
