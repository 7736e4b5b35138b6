package kubelet

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"plainkube.dev/plainkube/internal/kubelet/network"
)

// Files the agent keeps per pod under <DataDir>/pod-files/<pod uid>/:
// etc-hosts (the pod's /etc/hosts) and containers/<name>/<attempt>, the
// file bind-mounted at each container's terminationMessagePath. They go
// when the pod does.

func (a *Agent) podFilesDir(uid types.UID) string {
	return filepath.Join(a.opts.DataDir, "pod-files", string(uid))
}

// terminationFile creates the (empty) termination message file of one
// attempt of container c and returns its path.
func (a *Agent) terminationFile(pod *corev1.Pod, c *corev1.Container, attempt uint32) (string, error) {
	dir := filepath.Join(a.podFilesDir(pod.UID), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, strconv.Itoa(int(attempt)))
	// Writable by whatever user the container runs as.
	if err := os.WriteFile(p, nil, 0o666); err != nil {
		return "", err
	}
	return p, os.Chmod(p, 0o666)
}

// writeHostsFile writes pod's /etc/hosts and returns its path.
func (a *Agent) writeHostsFile(pod *corev1.Pod, podIP string) (string, error) {
	dir := a.podFilesDir(pod.UID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, "etc-hosts")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, network.HostsFile(pod, podIP, a.opts.ClusterDomain), 0o644); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// removePodFiles removes the files of pod uid.
func (a *Agent) removePodFiles(uid types.UID) error {
	return os.RemoveAll(a.podFilesDir(uid))
}

// removeOrphanPodFiles removes the files of pods that are not live and
// that have not changed for a minute: a pod that came after the caller's
// list of live pods may be writing its first files.
func (a *Agent) removeOrphanPodFiles(live map[types.UID]bool) {
	entries, _ := os.ReadDir(filepath.Join(a.opts.DataDir, "pod-files"))
	for _, e := range entries {
		if live[types.UID(e.Name())] {
			continue
		}
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		_ = a.removePodFiles(types.UID(e.Name()))
	}
}
