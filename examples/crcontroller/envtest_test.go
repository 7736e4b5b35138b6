package crcontroller_test

import (
	"context"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"plainkube.dev/plainkube/pkg/testenv"
)

// TestEnvtestOnTestenv keeps controller-runtime's own envtest.Environment
// and points it at a testenv control plane as an "existing cluster":
// envtest installs the CRDs itself (and removes them at Stop), the
// controller runs as before. Only the control plane is new.
func TestEnvtestOnTestenv(t *testing.T) {
	env := testenv.Start(t, testenv.WithControllers(), testenv.WithScheduler(), testenv.WithSimNodes(1))

	testEnv := &envtest.Environment{
		UseExistingCluster:    ptr.To(true),
		Config:                env.Config,
		CRDDirectoryPaths:     []string{"config/crd"},
		ErrorIfCRDPathMissing: true,
		CRDInstallOptions:     envtest.CRDInstallOptions{CleanUpAfterUse: true},
	}
	cfg, err := testEnv.Start()
	if err != nil {
		t.Fatal(err)
	}
	if len(testEnv.CRDs) != 1 || testEnv.CRDs[0].Name != "apps.demo.plainkube.dev" {
		t.Fatalf("envtest installed %d CRDs", len(testEnv.CRDs))
	}

	c := startManager(t, cfg)
	if err := c.Create(context.Background(), newApp("default", "web", 2)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, "default", "web", 2)

	// Stop uninstalls the CRD and waits until it is gone (its Apps first).
	if err := testEnv.Stop(); err != nil {
		t.Fatalf("envtest Stop: %v", err)
	}
}

// TestTestenvEnvironment is the same suite set-up with testenv's
// Environment, which has envtest.Environment's shape for suites that start
// their control plane in TestMain or BeforeSuite: only the type changed,
// and Options add what envtest has not.
func TestTestenvEnvironment(t *testing.T) {
	testEnv := &testenv.Environment{
		CRDDirectoryPaths:     []string{"config/crd"},
		ErrorIfCRDPathMissing: true,
		Options:               []testenv.Option{testenv.WithControllers(), testenv.WithScheduler(), testenv.WithSimNodes(1)},
	}
	cfg, err := testEnv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the manager's, which t.Cleanup runs first
		if err := testEnv.Stop(); err != nil {
			t.Error(err)
		}
	})
	c := startManager(t, cfg)
	if err := c.Create(context.Background(), newApp("default", "web", 1)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, "default", "web", 1)
}
