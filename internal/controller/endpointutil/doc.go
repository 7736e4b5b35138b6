// Package endpointutil decides how a pod appears behind a Service — whether
// it belongs in the endpoints at all, its addresses, hostname and target
// ports, which Services select it, and the last-change-trigger-time — for
// the two controllers that publish endpoints: endpointslice
// (EndpointSlices) and endpoints (the legacy Endpoints object). It also
// holds what the controllers writing EndpointSlices (endpointslice and
// endpointslicemirroring) share: the tracker of their own slice writes,
// endpoint sets keyed as upstream hashes endpoints, and the canonical
// packing of Endpoints subsets (Repack). Upstream shares the same logic
// through its k8s.io/endpointslice library and pkg/controller/util/endpoint.
package endpointutil
