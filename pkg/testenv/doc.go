// Package testenv starts a real plainkube control plane inside a Go test:
// the API server over in-memory storage (or embedded etcd), optionally the
// controllers, the scheduler and simulated nodes, and the test's own CRDs,
// reachable over HTTPS with a *rest.Config. Nothing is downloaded, no
// binary is run and no root is needed; many environments run side by side
// in one process.
//
//	func TestMyController(t *testing.T) {
//		env := testenv.Start(t,
//			testenv.WithControllers(), testenv.WithScheduler(), testenv.WithSimNodes(3),
//			testenv.WithCRDs("config/crd"))
//		cs := kubernetes.NewForConfigOrDie(env.Config)
//		…
//	}
//
// The environment stops when the test ends (t.Cleanup). A suite that
// shares one environment calls env.Reset between its tests: the objects
// the tests made are deleted and those they changed written back, in
// about 20 ms.
//
// It stands in for controller-runtime's envtest. Environment has
// envtest.Environment's shape (CRDDirectoryPaths, Start, Stop…) for suites
// that start their control plane in TestMain or a Ginkgo BeforeSuite, and
// envtest itself can use a testenv control plane as an existing cluster
// (envtest.Environment{UseExistingCluster: ptr.To(true), Config:
// env.Config}). examples/crcontroller shows both with a controller-runtime
// controller.
//
// Existing envtest suites need no change at all: WriteEnvtestAssets (the
// plainkube envtest-assets command) makes a KUBEBUILDER_ASSETS directory
// whose kube-apiserver and etcd run plainkube instead (RunKubeAPIServer,
// RunEtcd), with the garbage collector and namespace controller that
// upstream's binaries lack.
//
// BenchmarkStart measures the cost of a control plane to a test:
//
//	go test -run '^$' -bench Start ./pkg/testenv/
package testenv
