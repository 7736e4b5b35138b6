// Package rootcacert is plainkube's root CA publisher: it keeps a
// "kube-root-ca.crt" ConfigMap holding the cluster CA (key "ca.crt") in
// every active namespace, so that pods can verify the API server (service
// account token projections mount it), as upstream's root-ca-cert-publisher.
//
// The controller watches Namespaces and the ConfigMaps of that name. A
// namespace that is added or updated, or whose ConfigMap is edited or
// deleted, is queued; a reconcile compares the cached ConfigMap with
// what plan (plan.go, pure, table-tested in plan_test.go) wants and
// creates or updates it: the data must be exactly
// {"ca.crt": <CA PEM>} and the kubernetes.io/description annotation must be
// set; other labels and annotations are kept. Namespaces that are not
// Active are left alone.
package rootcacert
