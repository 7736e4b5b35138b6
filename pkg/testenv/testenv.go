package testenv

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/controllermanager"
	"plainkube.dev/plainkube/internal/kubelet/sim"
	"plainkube.dev/plainkube/internal/scheduler"
	"plainkube.dev/plainkube/internal/server"
)

// Env is a running control plane.
type Env struct {
	// Config is an admin (system:masters) client config over HTTPS.
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file for the same admin user, for
	// tools such as kubectl.
	KubeconfigPath string
	// URL is the API server's address.
	URL string
	srv *server.Server
}

type options struct {
	etcd       bool
	port       int
	components []server.Component
	logger     *slog.Logger
}

// Option configures Start.
type Option func(*options)

// WithEtcd stores objects in an embedded etcd instead of memory.
func WithEtcd() Option { return func(o *options) { o.etcd = true } }

// WithPort serves on a fixed loopback port instead of a random one.
func WithPort(port int) Option { return func(o *options) { o.port = port } }

// WithControllers runs plainkube's controller manager (garbage collector,
// namespace deletion, and the others), as a real cluster does.
func WithControllers() Option {
	return func(o *options) {
		o.components = append(o.components, func(ctx context.Context, env server.ComponentEnv) error {
			return controllermanager.Run(ctx, env.Config, controllermanager.Options{RootCA: env.CAPEM})
		})
	}
}

// WithScheduler runs plainkube's scheduler, so pods get bound to nodes.
func WithScheduler() Option {
	return WithComponent(func(ctx context.Context, cfg *rest.Config) error {
		s, err := scheduler.New(cfg, scheduler.Options{})
		if err != nil {
			return err
		}
		return s.Run(ctx)
	})
}

// WithSimNodes runs n simulated nodes (Ready, with leases; pods bound to
// them go through a kubelet's lifecycle without containers).
func WithSimNodes(n int) Option {
	return WithComponent(func(ctx context.Context, cfg *rest.Config) error {
		s, err := sim.New(cfg, sim.Options{Nodes: n})
		if err != nil {
			return err
		}
		return s.Run(ctx)
	})
}

// WithComponent runs any in-process component against the environment's
// loopback client config until the test ends.
func WithComponent(run func(ctx context.Context, cfg *rest.Config) error) Option {
	return func(o *options) {
		o.components = append(o.components, func(ctx context.Context, env server.ComponentEnv) error { return run(ctx, env.Config) })
	}
}

// WithLogger sends the control plane's logs to l (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Start starts a control plane for the test and stops it when the test ends.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	o := &options{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, opt := range opts {
		opt(o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Start(ctx, server.Options{
		DataDir: t.TempDir(), BindAddress: "127.0.0.1", Port: o.port, InMemory: !o.etcd,
		Components: o.components, Logger: o.logger,
	})
	if err != nil {
		cancel()
		t.Fatalf("testenv: starting the control plane: %v", err)
	}
	t.Cleanup(func() { cancel(); srv.Wait() })
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.KubeconfigPath)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	cfg.QPS, cfg.Burst = -1, 1000
	return &Env{Config: cfg, KubeconfigPath: srv.KubeconfigPath, URL: srv.URL, srv: srv}
}
