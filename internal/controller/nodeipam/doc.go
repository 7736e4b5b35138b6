// Package nodeipam gives each Node a pod CIDR from the cluster CIDR, as
// upstream's node IPAM controller (range allocator) does: a node without
// spec.podCIDR gets the first free /24 (by default) of --cluster-cidr, and
// the CIDRs nodes already hold, assigned by anyone, are never handed out
// again. It has the one shape of internal/controller, on its Builder: observe
// (the node and the ranges in use) → plan (plan.go: plan(State) Plan and
// Allocate, pure, table-tested in plan_test.go) → apply (a patch of
// spec.podCIDR and spec.podCIDRs), one node at a time so that two nodes
// never get the same range.
package nodeipam
