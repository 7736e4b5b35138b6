// Package probes runs what a container asks the node agent to run in or
// against it: startup, readiness and liveness probes (exec, httpGet,
// tcpSocket, grpc with the grpc.health.v1 service) and postStart and
// preStop lifecycle hooks (exec, httpGet, sleep).
//
// The agent (internal/kubelet) holds one Runner. During each pod sync it
// calls Probe with the pod's running containers; what a probe's result
// means is pure (probeDue, probeRecord), and the Results reach the agent's
// pure plan and status: a container whose readiness probe has not
// succeeded is not ready, and one whose liveness or startup probe failed
// failureThreshold times is stopped and restarted as its restart policy
// says. PostStart runs right after a container starts (it counts as
// started only once the hook is done; a failed hook kills it); PreStop
// runs before every stop, within the grace period, and returns what is
// left of it (at least MinStopGrace). Exec handlers go through the CRI
// runtime (Exec); failures are recorded as events (Unhealthy,
// FailedPostStartHook, FailedPreStopHook).
package probes
