// Package runtime is the node agent's side of the container runtime: what
// containerd shows of a pod, and how the agent's wishes are written as
// CRI v1 requests.
//
// The agent (internal/kubelet) holds one Runtime over the CRI services of
// the containerd it started or connected to (package containerd). Observe
// reads a pod's sandboxes and containers (found by the io.kubernetes.pod.uid
// label) and which of its images are missing, into a Pod that the agent's
// pure plan and status take as input; exited containers carry their
// termination message (the file bound at terminationMessagePath, or the
// tail of the log). The agent carries out its plan through the embedded
// CRI runtime service, with configurations from SandboxConfig and
// ContainerConfig: labels and annotations as upstream's kubelet sets them,
// namespaces, hostPort mappings, security contexts (runAsNonRoot checked
// against the image's user by VerifyNonRoot) and cgroup resources with
// upstream's OOM score by QoS class. RemoveOrphans removes the sandboxes
// of pods that are gone; PodUsage samples running containers' usage for
// the stats summary.
//
// The configurations are pure functions of the pod spec; only Runtime's
// methods talk to containerd.
package runtime
