package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"plainkube.dev/plainkube/pkg/testenv"
)

// runEnvtestAssets writes the KUBEBUILDER_ASSETS directory that makes
// controller-runtime's envtest start plainkube, and prints its path.
func runEnvtestAssets(args []string, stdout io.Writer) error {
	if len(args) != 1 || args[0] == "-h" || args[0] == "--help" {
		return errors.New(`usage: plainkube envtest-assets DIR

Writes DIR/kube-apiserver, DIR/etcd and DIR/kubectl, scripts that run this
binary as each; then

  KUBEBUILDER_ASSETS=DIR go test ./...

runs an envtest suite on plainkube, unchanged. Environment variables:
  ` + testenv.EnvControllers + `  controllers to run (default garbagecollector,namespace;
                                 "*" all, "scheduler" the scheduler, "none")
  ` + testenv.EnvSimNodes + `    simulated nodes to run pods on (and the scheduler)
  ` + testenv.EnvEtcd + `        "embedded": a real etcd (objects outlive an API server restart)
  ` + testenv.EnvLogLevel + `        stand-ins' log level on stderr (default warn)`)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return err
	}
	dir, err := filepath.Abs(args[0])
	if err != nil {
		return err
	}
	if err := testenv.WriteEnvtestAssets(dir, exe); err != nil {
		return err
	}
	fmt.Fprintln(stdout, dir)
	return nil
}

// runEnvtestAsset runs this binary as an envtest asset (the scripts
// runEnvtestAssets writes call it): envtest-asset kube-apiserver|etcd ARGS….
func runEnvtestAsset(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: plainkube envtest-asset kube-apiserver|etcd ARGS...")
	}
	switch args[0] {
	case "kube-apiserver":
		return testenv.RunKubeAPIServer(args[1:], os.Stdout, os.Stderr)
	case "etcd":
		return testenv.RunEtcd(args[1:], os.Stdout, os.Stderr)
	}
	return fmt.Errorf("envtest-asset: no stand-in is called %q", args[0])
}
