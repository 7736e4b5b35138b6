// Package endpointslice is plainkube's EndpointSlice controller: it lists
// the pods behind every Service with a selector in EndpointSlices, which
// the service proxy and cluster DNS read.
//
// The controller watches Services, Pods, Nodes and the slices it manages
// (label endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io).
// An event names a Service to look at; a reconcile reads the Service, the
// pods its selector matches and its current slices from the informer
// caches, and plan (plan.go: plan(State) Plan, pure) says which slices to
// create, update in place or delete, as upstream's reconciler does: one
// address type per IP family; pods grouped by their resolved port set (a
// named targetPort is looked up in each pod's containers); endpoints with
// ready/serving/terminating conditions, node name, zone (the node's
// topology.kubernetes.io/zone label), hostname and a reference to the pod;
// at most MaxEndpointsPerSlice endpoints per slice; one empty placeholder
// slice for a Service without endpoints. Slices carry the Service's labels,
// kubernetes.io/service-name, the managed-by label, an owner reference to
// the Service (the garbage collector removes them with it) and the
// endpoints.kubernetes.io/last-change-trigger-time annotation.
//
// Services without a selector, such as the API server's own "kubernetes"
// Service, and ExternalName Services are left alone.
//
// A tracker remembers the generation of every slice the controller wrote,
// so that a reconcile running on a cache that has not yet seen those
// writes waits instead of creating duplicates, and so that the echo of its
// own writes does not trigger more work. The pod helpers (FindPort,
// ShouldPodBeInEndpoints, the trigger-time tracker…) are shared with the
// Endpoints controller (package endpoints).
package endpointslice
