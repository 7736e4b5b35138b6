// Package endpointslicemirroring is plainkube's EndpointSliceMirroring
// controller: it mirrors the Endpoints objects that users write by hand,
// for Services without a selector, into EndpointSlices, which is what the
// service proxy and cluster DNS read.
//
// The controller watches Endpoints, Services and the slices it manages
// (label endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io).
// An event names an Endpoints object; a reconcile reads it, its Service and
// its current slices from the informer caches, and plan (plan.go:
// plan(State) Plan, pure) says which slices to create, update or delete, as
// upstream's kube-controller-manager endpointslice-mirroring-controller
// does: an Endpoints is mirrored while its Service exists without a
// selector and it is neither labelled endpointslice.kubernetes.io/skip-mirror=true
// nor a leader-election lock; each repacked subset becomes one slice per
// address type (ready addresses, then notReadyAddresses with ready=false,
// at most MaxEndpointsPerSubset of them); slices carry the Endpoints'
// labels and annotations, kubernetes.io/service-name, the managed-by label
// and a controller reference to the Endpoints. When the Endpoints goes,
// the Service goes or gains a selector, or the skip label appears, the
// slices are deleted.
//
// The slice tracker and endpoint sets are shared with the EndpointSlice
// controller through package endpointutil.
package endpointslicemirroring
