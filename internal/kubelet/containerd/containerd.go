package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/template"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
)

// DefaultSandboxImage is the pause image plainkube builds and imports
// itself (internal/image/pause).
const DefaultSandboxImage = "plainkube.dev/pause:3.10"

// DefaultCNIBinDir is where Debian's containernetworking-plugins installs
// the CNI plugins.
const DefaultCNIBinDir = "/usr/lib/cni"

// Options configure Start. DataDir is required; the rest have defaults.
type Options struct {
	// DataDir holds everything containerd writes: root/, state/, the
	// sockets, cni/net.d and containerd.log.
	DataDir string
	// SandboxImage is the CRI sandbox image (default DefaultSandboxImage).
	SandboxImage string
	// CNIBinDir is where the CNI plugins are (default DefaultCNIBinDir).
	CNIBinDir string
	// Snapshotter (default "overlayfs").
	Snapshotter string
	// Binary is the containerd executable (default: "containerd" on PATH).
	Binary string
	// StartTimeout bounds how long Start waits for the CRI service
	// (default 30s).
	StartTimeout time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Process is a running containerd and CRI clients connected to it: one
// Start started (and Stop ends), or one already running that Connect
// reached (Stop only closes the clients).
type Process struct {
	opts    Options
	cmd     *exec.Cmd // nil: not ours (Connect)
	done    chan struct{}
	waitErr error
	log     *os.File
	socket  string
	cniConf string

	// Runtime and Images are CRI v1 clients of this containerd.
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
}

// required lists the binaries Start and internal/image need, with the
// Debian package that provides each.
var required = []struct{ bin, pkg string }{
	{"containerd", "containerd"},
	{"ctr", "containerd"},
	{"runc", "runc"},
}

// CheckInstalled returns an error naming what to install when containerd,
// ctr or runc is not on PATH, or the CNI plugins are not in cniBinDir
// (skipped when cniBinDir is "").
func CheckInstalled(cniBinDir string) error {
	var missing []string
	pkgs := map[string]bool{}
	for _, r := range required {
		if _, err := exec.LookPath(r.bin); err != nil {
			missing = append(missing, r.bin)
			pkgs[r.pkg] = true
		}
	}
	if cniBinDir != "" {
		if _, err := os.Stat(filepath.Join(cniBinDir, "bridge")); err != nil {
			missing = append(missing, "CNI plugins in "+cniBinDir)
			pkgs["containernetworking-plugins"] = true
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var names []string
	for _, p := range []string{"containerd", "runc", "containernetworking-plugins"} {
		if pkgs[p] {
			names = append(names, p)
		}
	}
	return fmt.Errorf("the node agent needs %s; install them with: apt-get install -y %s",
		strings.Join(missing, ", "), strings.Join(names, " "))
}

func (o Options) withDefaults() (Options, error) {
	if o.DataDir == "" {
		return o, errors.New("containerd: a data directory is required")
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return o, err
	}
	o.DataDir = abs
	if o.SandboxImage == "" {
		o.SandboxImage = DefaultSandboxImage
	}
	if o.CNIBinDir == "" {
		o.CNIBinDir = DefaultCNIBinDir
	}
	if o.Snapshotter == "" {
		o.Snapshotter = "overlayfs"
	}
	if o.Binary == "" {
		o.Binary = "containerd"
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// Socket is the gRPC socket of a containerd started with dataDir.
func Socket(dataDir string) string { return filepath.Join(dataDir, "containerd.sock") }

// CNIConfDir is where a containerd started with dataDir reads CNI
// network configuration.
func CNIConfDir(dataDir string) string { return filepath.Join(dataDir, "cni", "net.d") }

// Start writes the configuration, starts containerd and waits for its CRI
// service. The process is stopped by Stop (or, should the agent die, by
// the kernel: it is started with a parent-death signal).
func Start(ctx context.Context, opts Options) (*Process, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := CheckInstalled(""); err != nil {
		return nil, err
	}
	for _, d := range []string{"root", "state", "opt", CNIConfDir(opts.DataDir)} {
		if !filepath.IsAbs(d) {
			d = filepath.Join(opts.DataDir, d)
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	cfgPath := filepath.Join(opts.DataDir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(Config(opts)), 0o600); err != nil {
		return nil, err
	}
	sock := Socket(opts.DataDir)
	_ = os.Remove(sock)
	logf, err := os.OpenFile(filepath.Join(opts.DataDir, "containerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(opts.Binary, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting containerd: %w", err)
	}
	p := &Process{opts: opts, cmd: cmd, done: make(chan struct{}), log: logf, socket: sock, cniConf: CNIConfDir(opts.DataDir)}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	opts.Logger.Info("started containerd", "pid", cmd.Process.Pid, "socket", sock, "log", logf.Name())
	if err := p.connect(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// connect waits for the socket and a CRI Version answer.
func (p *Process) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	sock := p.socket
	endpoint := "unix://" + sock
	logHint := ""
	if p.log != nil {
		logHint = "; see " + p.log.Name()
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("containerd exited during start-up (%v)%s", p.waitErr, logHint)
		case <-ctx.Done():
			return fmt.Errorf("containerd did not answer on %s within %s (last error: %v)%s", sock, p.opts.StartTimeout, lastErr, logHint)
		case <-tick.C:
		}
		if _, err := os.Stat(sock); err != nil {
			lastErr = err
			continue
		}
		if p.Runtime == nil {
			rs, err := remote.NewRemoteRuntimeService(ctx, endpoint, 10*time.Second, noop.NewTracerProvider(), false)
			if err != nil {
				lastErr = err
				continue
			}
			p.Runtime = rs
		}
		vctx, vcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := p.Runtime.Version(vctx, "v1")
		vcancel()
		if err != nil {
			lastErr = err
			continue
		}
		is, err := remote.NewRemoteImageService(ctx, endpoint, 10*time.Second, noop.NewTracerProvider(), false)
		if err != nil {
			return err
		}
		p.Images = is
		return nil
	}
}

// Socket is the path of this containerd's gRPC socket (for ctr -a).
func (p *Process) Socket() string { return p.socket }

// Endpoint is the CRI endpoint, unix://<socket>.
func (p *Process) Endpoint() string { return "unix://" + p.Socket() }

// CNIConfDir is where this containerd reads CNI network configuration.
func (p *Process) CNIConfDir() string { return p.cniConf }

// Version is the runtime's name and version as a node reports it:
// containerd://<version>.
func (p *Process) Version(ctx context.Context) (string, error) {
	v, err := p.Runtime.Version(ctx, "v1")
	if err != nil {
		return "", err
	}
	return v.RuntimeName + "://" + v.RuntimeVersion, nil
}

// RemoveAllPods stops and removes every pod sandbox (and so every
// container) this containerd runs, and says how many it removed.
// `plainkube cleanup` and tests call it before Stop so that no shim
// outlives them.
func (p *Process) RemoveAllPods(ctx context.Context) (int, error) {
	sbs, err := p.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
	if err != nil {
		return 0, err
	}
	var errs []error
	removed := 0
	for _, sb := range sbs {
		if err := p.Runtime.StopPodSandbox(ctx, sb.Id); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := p.Runtime.RemovePodSandbox(ctx, sb.Id); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// Stop closes the clients and ends containerd: SIGTERM, then SIGKILL after
// 10 seconds.
func (p *Process) Stop() error {
	ctx := context.Background()
	if p.Runtime != nil {
		_ = p.Runtime.Close(ctx)
	}
	if p.Images != nil {
		_ = p.Images.Close(ctx)
	}
	if p.cmd == nil {
		return nil
	}
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	p.log.Close()
	return nil
}

// Config is the containerd configuration Start writes for opts.
func Config(opts Options) string {
	var b strings.Builder
	if err := configTemplate.Execute(&b, opts); err != nil {
		panic(err) // the template and its input are fixed
	}
	return b.String()
}

var configTemplate = template.Must(template.New("config").Funcs(template.FuncMap{
	"q":    func(s string) string { return fmt.Sprintf("%q", s) },
	"join": filepath.Join,
}).Parse(`# Written by plainkube; regenerated at every start.
version = 2
root = {{q (join .DataDir "root")}}
state = {{q (join .DataDir "state")}}

[grpc]
  address = {{q (join .DataDir "containerd.sock")}}

[ttrpc]
  address = {{q (join .DataDir "containerd.sock.ttrpc")}}

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = {{q (join .DataDir "opt")}}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = {{q .SandboxImage}}
  restrict_oom_score_adj = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = {{q .Snapshotter}}
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = {{q .CNIBinDir}}
    conf_dir = {{q (join .DataDir "cni" "net.d")}}
`))
