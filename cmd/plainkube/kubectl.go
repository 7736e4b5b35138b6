package main

import (
	"os"
	"path/filepath"
	"strings"

	"k8s.io/component-base/cli"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"

	"plainkube.dev/plainkube/internal/server"
)

// runKubectl is kubectl itself (k8s.io/kubectl's command, of the release
// plainkube serves), as 'k3s kubectl' is: with the local server's admin
// kubeconfig unless KUBECONFIG or --kubeconfig says otherwise, so a
// machine without kubectl can use the cluster. It does not return.
func runKubectl(args []string) {
	if os.Getenv("KUBECONFIG") == "" && !hasKubeconfigFlag(args) {
		admin := filepath.Join(server.DefaultDataDir(), "admin.kubeconfig")
		if _, err := os.Stat(admin); err == nil {
			os.Setenv("KUBECONFIG", admin)
		}
	}
	os.Args = append([]string{"kubectl"}, args...)
	command := kubectlcmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		kubectlutil.CheckErr(err) // prints as kubectl does, and exits
	}
	os.Exit(0)
}

func hasKubeconfigFlag(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--kubeconfig" || strings.HasPrefix(a, "--kubeconfig=") {
			return true
		}
	}
	return false
}
