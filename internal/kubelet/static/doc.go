// Package static is the node agent's file source of pods: static pods,
// which the agent reads from manifest files (a Pod in YAML or JSON each)
// and runs without the API server, as upstream's kubelet does for the
// control plane it hosts.
//
// Pods.Scan reads the manifests folder; each valid manifest becomes a
// static pod named <name>-<node>, defaulted and validated as the API
// would, with its UID and config.hash from a hash of the pod, the node
// and the file path. An edited or removed file moves the old version to
// stopping (marked for deletion with its grace period). The agent
// (internal/kubelet) syncs current and stopping versions as it syncs the
// API's pods, keeps their last status here, and once the API answers
// mirrors each into it as a mirror pod (IsMirrorPod, config.mirror), which
// only reports the static pod and is never run.
package static
