// Package containerd runs containerd as a child process of the node agent
// and connects to it over CRI v1.
//
// Start writes a containerd configuration under a data directory of its own
// (root, state, sockets, CNI configuration: nothing is shared with a system
// containerd), starts Debian's `containerd` binary with it, waits until the
// CRI service answers, and returns a *Process holding a CRI runtime client
// and a CRI image client (k8s.io/cri-client). Stop ends the process (SIGTERM,
// then SIGKILL); containers keep running in their shims, as with any
// containerd restart, unless RemoveAllPods is called first.
//
// The generated configuration enables the CRI plugin with the runc v2
// runtime, the overlayfs snapshotter, restrict_oom_score_adj (lowering
// oom_score_adj is not permitted in unprivileged sandboxes, where runc
// otherwise fails with "can't get final child's PID from pipe"), a sandbox
// (pause) image that the caller must have imported (see internal/image/pause),
// CNI plugins from /usr/lib/cni (Debian's containernetworking-plugins) and
// CNI network configuration from <data dir>/cni/net.d.
//
// CheckInstalled reports, in one clear error, which of the binaries this
// needs (containerd, runc, ctr) are missing and which Debian packages provide
// them.
package containerd
