// Package testenv starts a real plainkube control plane inside a Go test:
// the API server over in-memory storage (or embedded etcd), optionally the
// controllers and simulated nodes, reachable over HTTPS with a *rest.Config.
// Nothing is downloaded, no binary is run and no root is needed; many
// environments run side by side in one process.
//
//	func TestMyController(t *testing.T) {
//		env := testenv.Start(t, testenv.WithControllers())
//		cs := kubernetes.NewForConfigOrDie(env.Config)
//		…
//	}
//
// The environment stops when the test ends (t.Cleanup).
package testenv
