// Package bench measures a Kubernetes control plane from outside, as a
// client would, so the same run can be made against plainkube and against
// upstream: `plainkube bench --kubeconfig K startup crud list watch churn`.
//
// Each workload is bounded in count and time, reports every figure with its
// unit, and returns a Result; Run prints a table and writes the JSON
// document. Workloads never assume plainkube: the server is reached only
// through its kubeconfig (and, for startup, a command that launches it).
package bench
