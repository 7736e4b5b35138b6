// Package endpointutil decides how a pod appears behind a Service — whether
// it belongs in the endpoints at all, its addresses, hostname and target
// ports, which Services select it, and the last-change-trigger-time — for
// the two controllers that publish endpoints: endpointslice
// (EndpointSlices) and endpoints (the legacy Endpoints object). Upstream
// shares the same logic through its k8s.io/endpointslice library and
// pkg/controller/util/endpoint.
package endpointutil
