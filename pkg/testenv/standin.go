package testenv

// The envtest stand-ins. controller-runtime's envtest starts the etcd and
// kube-apiserver binaries it finds in KUBEBUILDER_ASSETS (and kubectl for
// its KubeCtl helper); WriteEnvtestAssets puts the plainkube binary there
// under those names, and it then runs RunEtcd or RunKubeAPIServer, so that
// an existing envtest suite runs on plainkube unchanged:
//
//	plainkube envtest-assets /tmp/assets
//	KUBEBUILDER_ASSETS=/tmp/assets go test ./...

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
)

// Environment variables that configure the stand-ins beyond what
// envtest's flags say.
const (
	// EnvControllers lists the controllers the kube-apiserver stand-in
	// runs, as kube-controller-manager's --controllers ("*" the default
	// ones, "name" or "-name"; "gc" is the garbage collector), plus
	// "scheduler"; "none" runs none. Default: "garbagecollector,namespace",
	// the two whose absence envtest users meet first (owned objects that
	// never go, namespaces stuck Terminating).
	EnvControllers = "PLAINKUBE_ENVTEST_CONTROLLERS"
	// EnvSimNodes is a number of simulated nodes to run (with the
	// scheduler), for suites whose pods should be scheduled and run.
	EnvSimNodes = "PLAINKUBE_ENVTEST_SIM_NODES"
	// EnvEtcd, set to "embedded", makes the etcd stand-in a real (embedded)
	// etcd that the kube-apiserver stand-in stores in, so that objects
	// outlive a restart of the API server; by default the etcd stand-in
	// only holds its port and the API server keeps objects in memory.
	EnvEtcd = "PLAINKUBE_ENVTEST_ETCD"
	// EnvLogLevel is the level of the stand-ins' logs on stderr (debug,
	// info, warn, error; default warn).
	EnvLogLevel = "PLAINKUBE_ENVTEST_LOG"
)

// standinHeader marks the etcd stand-in's answers, so that the
// kube-apiserver stand-in knows to keep objects in memory.
const standinHeader = "Plainkube-Envtest-Etcd"

// WriteEnvtestAssets makes dir a KUBEBUILDER_ASSETS directory: kube-apiserver,
// etcd and kubectl there are small shell scripts that run the plainkube
// binary exe as each (plainkube envtest-asset NAME ARGS…, which calls
// RunKubeAPIServer, RunEtcd or kubectl itself). The scripts answer --help
// themselves, as envtest asks both binaries for it before starting them.
// Existing files of those names are replaced.
func WriteEnvtestAssets(dir, exe string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	quoted := "'" + strings.ReplaceAll(exe, "'", `'\''`) + "'"
	for _, name := range []string{"kube-apiserver", "etcd", "kubectl"} {
		script := "#!/bin/sh\n# plainkube's stand-in for controller-runtime's envtest (plainkube envtest-assets)\n"
		if name == "kubectl" {
			script += "exec " + quoted + " kubectl \"$@\"\n"
		} else {
			help, err := StandinHelp(name)
			if err != nil {
				return err
			}
			script += "for a do\n\tcase $a in -h|--help|-help) cat <<'EOF'\n" + help + "EOF\n\t\texit 0;;\n\tesac\ndone\n" +
				"exec " + quoted + " envtest-asset " + name + " \"$@\"\n"
		}
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// StandinHelp is the --help of the kube-apiserver or etcd stand-in.
func StandinHelp(name string) (string, error) {
	var fs *pflag.FlagSet
	switch name {
	case "kube-apiserver":
		fs = apiserverFlagSet(&apiserverFlags{})
	case "etcd":
		fs = etcdFlagSet(&etcdFlags{})
	default:
		return "", fmt.Errorf("no envtest stand-in is called %q", name)
	}
	return name + " (plainkube's stand-in for controller-runtime's envtest)\n\nFlags:\n" + fs.FlagUsages(), nil
}

// parseStandinFlags parses a stand-in's arguments with fs; done is true
// when there is nothing more to do: the arguments were wrong, or the help
// was asked for (and printed).
func parseStandinFlags(name string, fs *pflag.FlagSet, args []string, stdout, stderr io.Writer) (done bool, err error) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return true, err
	}
	if help, _ := fs.GetBool("help"); help {
		text, err := StandinHelp(name)
		if err == nil {
			_, err = io.WriteString(stdout, text)
		}
		return true, err
	}
	return false, nil
}
