package kubelet

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"plainkube.dev/plainkube/internal/kubelet/containerd"
)

// Options configure an Agent. DataDir is required; the rest have defaults.
type Options struct {
	// NodeName is the Node's name (default: the host name, lower-cased).
	NodeName string
	// DataDir holds containerd's files (containerd/), the pause binary
	// cache (cache/) and container logs (pods/).
	DataDir string
	// ControlPlane adds the node-role.kubernetes.io/control-plane label.
	ControlPlane bool
	// Labels are added to the Node's.
	Labels map[string]string
	// NodeIP is the InternalIP reported (default: the host's first
	// global unicast IPv4 address, else 127.0.0.1).
	NodeIP string
	// Runtime is a containerd already started (tests start their own to
	// import images first); when nil, Run starts one under DataDir and
	// stops it when it returns.
	Runtime *containerd.Process
	// HeartbeatInterval is how often the Lease is renewed (default 10s);
	// StatusInterval, how often node conditions are refreshed (default 1m);
	// SyncInterval, how often every pod is compared with the runtime to
	// notice exits (default 1s).
	HeartbeatInterval, StatusInterval, SyncInterval time.Duration
	// Workers is how many pods are synced at once (default 4); a pod
	// being stopped holds a worker for up to its grace period.
	Workers int
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.DataDir == "" {
		return o, errors.New("kubelet: a data directory is required")
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return o, err
	}
	o.DataDir = abs
	if o.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return o, err
		}
		o.NodeName = strings.ToLower(h)
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 10 * time.Second
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = time.Minute
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
