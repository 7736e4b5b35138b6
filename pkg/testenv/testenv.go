package testenv

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/api/nodeutil"
	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/controllermanager"
	"plainkube.dev/plainkube/internal/kubelet/sim"
	"plainkube.dev/plainkube/internal/scheduler"
	"plainkube.dev/plainkube/internal/server"
	"plainkube.dev/plainkube/internal/storage"
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
	// started is what the environment stored when Start returned (Reset).
	started *Snapshot
}

// Snapshot is what an environment stored at one moment, for Restore.
type Snapshot struct{ s *storage.Snapshot }

// Snapshot records every object the environment stores (a read of the
// whole store: about a millisecond for a fresh environment).
func (e *Env) Snapshot() (*Snapshot, error) {
	snap, err := e.srv.Snapshot(context.Background())
	if err != nil {
		return nil, err
	}
	return &Snapshot{snap}, nil
}

// Restore brings the environment's objects back to snap: objects made
// since are deleted, those changed written back, those deleted made again
// — ordinary writes, which informers and controllers see as watch events.
// A suite can share one environment across its tests this way, each test
// starting from the same objects, for a few milliseconds instead of a new
// control plane.
func (e *Env) Restore(snap *Snapshot) error {
	// Controllers react to the restore's writes a moment later (a
	// ReplicaSet controller that has not yet seen its ReplicaSet go makes
	// a pod again): the store is looked at again until it stays as snap.
	for range maxRestores {
		writes, err := e.srv.Restore(context.Background(), snap.s)
		if err != nil || writes == 0 {
			return err
		}
		time.Sleep(restoreSettle)
	}
	return fmt.Errorf("testenv: the environment kept changing while it was restored")
}

// Restore's settling: how long the controllers are given to react to its
// writes before the store is looked at again, and how many times.
const (
	restoreSettle = 20 * time.Millisecond
	maxRestores   = 10
)

// Reset restores what the environment stored when Start returned: its
// namespaces, default RBAC policy and CRDs, without the tests' objects.
// Controllers that run in it (WithControllers, simulated nodes) may still
// write what they always make again (leases, default service accounts).
func (e *Env) Reset() error { return e.Restore(e.started) }

type options struct {
	etcd       bool
	port       int
	components []server.Component
	logger     *slog.Logger
	crdPaths   []string
	crds       []*apiextensionsv1.CustomResourceDefinition
	// crdPathsOptional skips missing CRD paths (envtest's default).
	crdPathsOptional bool
	// serviceAccounts runs the default pod admission plugins
	// (ServiceAccount, DefaultTolerationSeconds): only with the
	// controllers, whose service-account controller makes the "default"
	// accounts they need (envtest runs without them).
	serviceAccounts bool
	// server adjusts the server's options last (the envtest stand-in's
	// flags).
	server []func(*server.Options)
	// ready are waited for before Start returns, with the admin config.
	ready []func(ctx context.Context, cfg *rest.Config) error
}

// Option configures Start.
type Option func(*options)

// WithEtcd stores objects in an embedded etcd instead of memory.
func WithEtcd() Option { return func(o *options) { o.etcd = true } }

// WithPort serves on a fixed loopback port instead of a random one.
func WithPort(port int) Option { return func(o *options) { o.port = port } }

// WithControllers runs plainkube's controller manager (garbage collector,
// namespace deletion, and the others), as a real cluster does. Names, if
// given, choose the controllers as kube-controller-manager's --controllers
// does: "garbagecollector,namespace" runs those two only, "*,-podgc" the
// default ones but podgc (plainkube's or upstream's names). Start returns
// once every controller has synced its informers: what a test creates
// next, they see.
func WithControllers(names ...string) Option {
	return func(o *options) {
		// Upstream's default admission plugins need controllers to finish
		// their work (a namespace's default service account, a new node's
		// not-ready taint removed): on only when those run.
		o.serviceAccounts = controllermanager.RunsAll(names, controllermanager.AdmissionControllers...)
		synced := make(chan struct{})
		o.components = append(o.components, func(ctx context.Context, env server.ComponentEnv) error {
			return controllermanager.Run(ctx, env.ConfigAs(auth.ControllerManagerUser()), controllermanager.Options{RootCA: env.CAPEM,
				Informers: env.Informers, ServiceAccountConfig: env.ServiceAccountConfig, Controllers: names,
				Synced: func() { close(synced) }})
		})
		o.ready = append(o.ready, func(ctx context.Context, _ *rest.Config) error {
			select {
			case <-synced:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(controllersSyncTimeout):
				return fmt.Errorf("the controllers' informers did not sync within %v", controllersSyncTimeout)
			}
		})
	}
}

// controllersSyncTimeout bounds Start's wait for the controllers' informers.
const controllersSyncTimeout = 30 * time.Second

// WithScheduler runs plainkube's scheduler, so pods get bound to nodes.
// It shares its informers with the controllers, as in plainkube server.
func WithScheduler() Option {
	return func(o *options) {
		o.components = append(o.components, func(ctx context.Context, env server.ComponentEnv) error {
			s, err := scheduler.New(env.ConfigAs(auth.SchedulerUser()), scheduler.Options{Informers: env.Informers})
			if err != nil {
				return err
			}
			return s.Run(ctx)
		})
	}
}

// WithSimNodes runs n simulated nodes (Ready, with leases; pods bound to
// them go through a kubelet's lifecycle without containers); Start returns
// once they are registered and Ready.
func WithSimNodes(n int) Option {
	run := WithComponent(func(ctx context.Context, cfg *rest.Config) error {
		s, err := sim.New(cfg, sim.Options{Nodes: n})
		if err != nil {
			return err
		}
		return s.Run(ctx)
	})
	return func(o *options) {
		run(o)
		o.ready = append(o.ready, func(ctx context.Context, cfg *rest.Config) error {
			return waitForSimNodes(ctx, cfg, n)
		})
	}
}

// waitForSimNodes waits until n simulated nodes are Ready.
func waitForSimNodes(ctx context.Context, cfg *rest.Config, n int) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ready := 0
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sim.LabelSimulated})
		if err != nil {
			return false, nil // the next poll reads again
		}
		ready = 0
		for i := range nodes.Items {
			if nodeutil.IsReady(&nodes.Items[i]) {
				ready++
			}
		}
		return ready >= n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d simulated nodes to be Ready (%d are): %w", n, ready, err)
	}
	return nil
}

// WithComponent runs any in-process component against the environment's
// loopback admin (system:masters) client config until the test ends.
func WithComponent(run func(ctx context.Context, cfg *rest.Config) error) Option {
	return func(o *options) {
		o.components = append(o.components, func(ctx context.Context, env server.ComponentEnv) error { return run(ctx, env.AdminConfig) })
	}
}

// WithLogger sends the control plane's logs to l (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Start starts a control plane for the test and stops it when the test ends.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	env, stop, err := start(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(stop)
	return env
}

// shutdownGrace is how long a stopping environment waits for its clients'
// requests and connections: a test is over by then.
const shutdownGrace = 100 * time.Millisecond

// start starts a control plane keeping its files in dataDir; stop ends it
// and waits until it has stopped.
func start(dataDir string, opts []Option) (env *Env, stop func(), err error) {
	o := &options{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, opt := range opts {
		opt(o)
	}
	crds, err := ReadCRDs(!o.crdPathsOptional, o.crdPaths...)
	if err != nil {
		return nil, nil, err
	}
	crds = append(crds, o.crds...)
	components := o.components
	var crdsInstalled chan error
	if len(crds) > 0 {
		// The CRDs go in first, and the other components start once they
		// are served, so that controllers that read discovery once at start
		// (the garbage collector, until its next resync) know the new kinds.
		crdsInstalled = make(chan error, 1)
		ready := make(chan struct{})
		components = []server.Component{func(ctx context.Context, env server.ComponentEnv) error {
			err := InstallCRDs(ctx, env.AdminConfig, crds...)
			crdsInstalled <- err
			if err == nil {
				close(ready)
			}
			return err
		}}
		for _, run := range o.components {
			components = append(components, func(ctx context.Context, env server.ComponentEnv) error {
				select {
				case <-ready:
					return run(ctx, env)
				case <-ctx.Done():
					return nil
				}
			})
		}
	}
	serverOpts := server.Options{
		DataDir: dataDir, BindAddress: "127.0.0.1", Port: o.port, InMemory: !o.etcd,
		Components: components, Logger: o.logger, DefaultAdmission: o.serviceAccounts,
		ShutdownGrace: shutdownGrace,
	}
	for _, f := range o.server {
		f(&serverOpts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Start(ctx, serverOpts)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("starting the control plane: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.KubeconfigPath)
	if err != nil {
		cancel()
		srv.Wait()
		return nil, nil, err
	}
	cfg.QPS, cfg.Burst = -1, 1000
	stop = func() {
		// Clients made from Config share one cached transport. Close its
		// idle connections first: a connection dialled but never used
		// counts as active for the HTTP server's graceful shutdown for
		// its first five seconds, which a test would otherwise wait out.
		if rt, err := rest.TransportFor(cfg); err == nil {
			utilnet.CloseIdleConnectionsFor(rt)
		}
		cancel()
		srv.Wait()
	}
	if crdsInstalled != nil {
		if err := <-crdsInstalled; err != nil {
			stop()
			return nil, nil, err
		}
	}
	for _, ready := range o.ready {
		if err := ready(ctx, cfg); err != nil {
			stop()
			return nil, nil, err
		}
	}
	env = &Env{Config: cfg, KubeconfigPath: srv.KubeconfigPath, URL: srv.URL, srv: srv}
	if env.started, err = env.Snapshot(); err != nil {
		stop()
		return nil, nil, err
	}
	return env, stop, nil
}
