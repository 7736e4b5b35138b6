// Package subresources holds the handlers of the core/v1 subresources that
// answer for themselves rather than through the API server's generic
// verbs; the resources of package core declare them (registry.Handler),
// and the API server routes each request to the one declared:
//
//   - pods/binding (the scheduler's assignment of a node) and
//     pods/eviction (a delete through the Eviction API that the pod's
//     PodDisruptionBudget must allow);
//   - pods/log, exec, attach and portforward, proxied to the node agent of
//     the pod's node over HTTPS with the API server's kubelet client: SPDY
//     and pre-v5 WebSockets pass through, v5.channel.k8s.io WebSockets are
//     translated to SPDY toward it, WebSocket port forwarding tunnels SPDY;
//   - nodes/proxy to the agent, pods/proxy to podIP:port, services/proxy
//     to a ready endpoint of its EndpointSlices;
//   - serviceaccounts/token (TokenRequest), signed by the server's
//     service-account key.
//
// What a handler needs of the API server (reads, the generic update and
// delete paths, the codec, authorization, clients) comes through
// registry.API. Pods on simulated nodes answer 400: they run nothing.
package subresources
