package containerd

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultCNIConfDir is where containerd reads CNI network configuration
// unless its configuration says otherwise.
const DefaultCNIConfDir = "/etc/cni/net.d"

// ConnectOptions configure Connect.
type ConnectOptions struct {
	// CNIConfDir is where that containerd reads CNI network configuration
	// (where the agent writes its network): default, the conf_dir its CRI
	// plugin reports, else DefaultCNIConfDir.
	CNIConfDir string
	// Timeout bounds the wait for its CRI service (default 30s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// SocketPath is the socket of a CRI endpoint: unix:///path, or a path.
func SocketPath(endpoint string) (string, error) {
	p := endpoint
	if rest, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		p = rest
	} else if strings.Contains(endpoint, "://") {
		return "", fmt.Errorf("container runtime endpoint %q: only unix:// sockets are supported", endpoint)
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("container runtime endpoint %q: the socket path must be absolute (unix:///run/containerd/containerd.sock)", endpoint)
	}
	return p, nil
}

// Connect reaches a containerd that is already running, at endpoint
// (unix:///path/containerd.sock), through CRI v1. It is not started or
// stopped by plainkube: its CRI plugin must be enabled, and its CNI
// configuration (bin_dir holding the plugins, conf_dir where the agent
// writes its network) is its owner's.
func Connect(ctx context.Context, endpoint string, opts ConnectOptions) (*Process, error) {
	sock, err := SocketPath(endpoint)
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if _, err := os.Stat(sock); err != nil {
		return nil, fmt.Errorf("container runtime endpoint %s: %w", endpoint, err)
	}
	p := &Process{opts: Options{StartTimeout: opts.Timeout, Logger: opts.Logger}, done: make(chan struct{}), socket: sock}
	if err := p.connect(ctx); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w (is its CRI plugin enabled?)", err)
	}
	info := p.criInfo(ctx)
	p.cniConf = opts.CNIConfDir
	if p.cniConf == "" {
		p.cniConf = info.cniConfDir
	}
	if p.cniConf == "" {
		p.cniConf = DefaultCNIConfDir
	}
	if len(info.cniBinDirs) > 0 && !anyHasBridge(info.cniBinDirs) {
		opts.Logger.Warn("the containerd at the runtime endpoint finds no CNI bridge plugin in its bin_dir; pods off the host network will not start (Debian's containernetworking-plugins installs them in "+DefaultCNIBinDir+")",
			"bin_dirs", info.cniBinDirs)
	}
	opts.Logger.Info("using the containerd at the runtime endpoint", "socket", sock, "cniConfDir", p.cniConf, "sandboxImage", info.sandboxImage)
	return p, nil
}

func anyHasBridge(dirs []string) bool {
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
			return true
		}
	}
	return false
}

// criInfo is what a containerd's CRI plugin says of its configuration in
// its verbose status (fields it does not report stay empty).
type criInfo struct {
	cniConfDir   string
	cniBinDirs   []string
	sandboxImage string
}

func (p *Process) criInfo(ctx context.Context) criInfo {
	var out criInfo
	st, err := p.Runtime.Status(ctx, true)
	if err != nil || st == nil {
		return out
	}
	var cni struct {
		PluginDirs    []string `json:"PluginDirs"`
		PluginConfDir string   `json:"PluginConfDir"`
	}
	if json.Unmarshal([]byte(st.Info["cniconfig"]), &cni) == nil {
		out.cniConfDir, out.cniBinDirs = cni.PluginConfDir, cni.PluginDirs
	}
	var cfg struct {
		SandboxImage string `json:"sandboxImage"`
		PinnedImages struct {
			Sandbox string `json:"sandbox"`
		} `json:"pinnedImages"`
	}
	for _, key := range []string{"config", "imageConfig"} {
		if json.Unmarshal([]byte(st.Info[key]), &cfg) == nil {
			if cfg.SandboxImage != "" {
				out.sandboxImage = cfg.SandboxImage
			} else if cfg.PinnedImages.Sandbox != "" && out.sandboxImage == "" {
				out.sandboxImage = cfg.PinnedImages.Sandbox
			}
		}
	}
	return out
}

// SandboxImage is the pause image this containerd runs pod sandboxes
// from, as its CRI plugin reports it ("" if it does not say).
func (p *Process) SandboxImage(ctx context.Context) string {
	return p.criInfo(ctx).sandboxImage
}

// External reports whether this containerd was reached with Connect (not
// started by plainkube).
func (p *Process) External() bool { return p.cmd == nil }
