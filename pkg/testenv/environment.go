package testenv

import (
	"errors"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
)

// Environment has the shape of controller-runtime's envtest.Environment, so
// that a suite which starts its control plane outside a single test — in
// TestMain or a Ginkgo BeforeSuite, where there is no *testing.T — can
// switch by changing the type's package:
//
//	testEnv = &testenv.Environment{ // was: &envtest.Environment{
//		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
//		ErrorIfCRDPathMissing: true,
//	}
//	cfg, err := testEnv.Start()
//	…
//	err = testEnv.Stop()
//
// Unlike envtest it needs no etcd or kube-apiserver binaries, and Options
// can add what envtest lacks: the controllers (garbage collection, namespace
// deletion, Deployments…), the scheduler and simulated nodes.
type Environment struct {
	// CRDDirectoryPaths are files or directories of CRDs to install (see
	// WithCRDs).
	CRDDirectoryPaths []string
	// CRDs are CRD objects to install.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// ErrorIfCRDPathMissing makes a missing CRD path an error; by default
	// it is skipped, as in envtest.
	ErrorIfCRDPathMissing bool
	// Options configure the control plane, as for Start.
	Options []Option

	// Config is set by Start: an admin client config.
	Config *rest.Config
	// KubeConfig is set by Start: a kubeconfig file's contents for the same
	// admin user, as envtest's field.
	KubeConfig []byte
	// Env is set by Start.
	Env *Env

	dir  string
	stop func()
}

// Start starts the control plane, installs the CRDs and returns Config.
func (e *Environment) Start() (*rest.Config, error) {
	if e.stop != nil {
		return nil, errors.New("testenv: Environment already started")
	}
	dir, err := os.MkdirTemp("", "plainkube-testenv-")
	if err != nil {
		return nil, err
	}
	opts := append([]Option{
		WithCRDs(e.CRDDirectoryPaths...),
		WithCRDObjects(e.CRDs...),
		func(o *options) { o.crdPathsOptional = !e.ErrorIfCRDPathMissing },
	}, e.Options...)
	env, stop, err := start(dir, opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	kc, err := os.ReadFile(env.KubeconfigPath)
	if err != nil {
		stop()
		os.RemoveAll(dir)
		return nil, err
	}
	e.Env, e.Config, e.KubeConfig, e.dir, e.stop = env, env.Config, kc, dir, stop
	return e.Config, nil
}

// Stop stops the control plane and removes its files. Stopping an
// Environment that is not running does nothing.
func (e *Environment) Stop() error {
	if e.stop == nil {
		return nil
	}
	e.stop()
	e.stop = nil
	return os.RemoveAll(e.dir)
}

// Reset restores what the environment stored when Start returned (see
// Env.Reset): in a suite's BeforeEach or AfterEach, each test starts from
// the same objects without a new control plane.
func (e *Environment) Reset() error {
	if e.Env == nil {
		return errors.New("testenv: Environment not started")
	}
	return e.Env.Reset()
}
