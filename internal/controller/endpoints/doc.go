// Package endpoints is plainkube's Endpoints controller: it keeps the
// legacy core/v1 Endpoints object of every Service with a selector in step
// with the pods behind it, for the clients that still read Endpoints.
//
// The controller watches Services, Pods and Endpoints. An event names a
// Service; a reconcile reads the Service and the pods its selector matches
// from the informer caches (observe), and plan with Desired (plan.go, pure,
// table-tested in plan_test.go) computes the
// Endpoints object, as upstream's endpoint controller: per Service port,
// each pod with an IP of the Service's family (named targetPorts resolved
// per pod) as a ready address, or a not-ready one if the pod is not Ready
// (terminating pods are left out unless the Service publishes not-ready
// addresses, which also makes every address ready); subsets repacked into
// canonical form; the Service's labels plus service.kubernetes.io/headless
// for a headless Service; the endpoints.kubernetes.io/last-change-trigger-time
// annotation; and at most MaxCapacity (1000) addresses, beyond which the
// object is truncated and annotated endpoints.kubernetes.io/over-capacity:
// truncated. It is written only when it differs.
//
// The Endpoints object of a deleted Service is deleted (leftovers from
// Services deleted while the controller was down are found at start).
// Services without a selector, such as the API server's "kubernetes"
// Service, and ExternalName Services are left alone.
package endpoints
