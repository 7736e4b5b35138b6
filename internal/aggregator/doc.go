// Package aggregator is API aggregation: the part of the API server that
// serves group-versions registered by APIServices (apiregistration.k8s.io/v1)
// by proxying them to another server running behind a Service, as
// upstream's kube-aggregator does for metrics-server, custom-metrics
// adapters and k8s.io/sample-apiserver.
//
// It is a client of the API server like the CRD controllers
// (internal/apiextensions), and plugs into it through one call,
// apiserver.Server.SetAggregatedAPIs, made whenever what it serves changes.
// It runs one loop over APIServices:
//
//   - autoregister: every group-version the server serves itself (built-in
//     or from a CustomResourceDefinition) has a "Local" APIService, as
//     upstream lists them;
//   - availability: a local APIService is always Available; a remote one is
//     Available once its Service exists, listens on the port named, has a
//     ready endpoint, and that endpoint answers the group-version's
//     discovery document — whose resource list then goes into the server's
//     aggregated discovery (/apis as apidiscovery.k8s.io/v2);
//   - proxy: an authenticated, authorized request under
//     /apis/<group>/<version> goes to one ready endpoint of the Service over
//     TLS, verified against the APIService's caBundle for the name
//     <service>.<namespace>.svc, with the front-proxy client certificate and
//     the user in X-Remote-User, X-Remote-Uid, X-Remote-Group and
//     X-Remote-Extra-* (the request-header authentication the extension
//     server reads from kube-system/extension-apiserver-authentication).
//
// The check also reads where the server serves the group-version's OpenAPI
// v3 document; the API server lists it in its /openapi/v3 index and proxies
// it. Not done: aggregated servers' OpenAPI v2 is not merged into
// /openapi/v2.
package aggregator
