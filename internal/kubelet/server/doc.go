// Package server is the node agent's HTTPS API (port 10250). As upstream's
// kubelet in Webhook mode, every request is authenticated (a client
// certificate of the cluster CA: CN the user, O the groups; or a bearer
// token, by TokenReview) and authorized by the API server with a
// SubjectAccessReview on this node's nodes/<subresource> (auth.go:
// Attributes maps paths and methods; answers are cached). The API server's
// kubelet client is in system:masters; other callers need RBAC-like grants
// such as nodes/proxy, nodes/stats, nodes/metrics. It serves:
//
//   - /healthz;
//   - /containerLogs/{namespace}/{pod}/{container}, from the container log
//     files the agent keeps under <data dir>/pods;
//   - /exec/{namespace}/{pod}/{container} (command=…, input, output, error,
//     tty), /attach/{namespace}/{pod}/{container} and
//     /portForward/{namespace}/{pod} (port=…), upstream's paths and
//     parameters: a Streamer (the agent) asks the container runtime for the
//     session's streaming URL, and the upgraded (SPDY or WebSocket)
//     connection is proxied to it unchanged;
//   - POST /run/{namespace}/{pod}/{container}?cmd=…, which runs a command
//     to its end and answers its output;
//   - /stats/summary, the agent's usage summary (Handler.Summary, package
//     stats);
//   - /pods, the v1 PodList of the pods the agent runs, static pods
//     included (Handler.Pods);
//   - /metrics, the agent's Prometheus metrics (Metrics: running pods and
//     containers, pod start latency, pod sync durations and errors, go_*
//     and process_*), and /metrics/resource, node, pod and container CPU
//     and working-set memory from the usage summary.
package server
