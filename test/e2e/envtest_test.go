package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// controllerRuntimeSuites are controller-runtime's own envtest-based
// suites (of the release in go.mod), run unchanged on plainkube's assets:
// the quick ones. pkg/cache and pkg/manager pass too but take over a
// minute each; pkg/client/apiutil downloads upstream's binaries itself.
var controllerRuntimeSuites = []string{
	"sigs.k8s.io/controller-runtime/pkg/envtest",
	"sigs.k8s.io/controller-runtime/pkg/client",
	"sigs.k8s.io/controller-runtime/pkg/controller",
	"sigs.k8s.io/controller-runtime/pkg/builder",
	"sigs.k8s.io/controller-runtime/pkg/webhook",
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion",
	"sigs.k8s.io/controller-runtime/pkg/source",
	"sigs.k8s.io/controller-runtime/pkg/cluster",
}

// TestEnvtestAssets: with KUBEBUILDER_ASSETS from `plainkube
// envtest-assets`, envtest suites run unchanged on plainkube — a project
// as kubebuilder scaffolds one (testdata/envtest-operator: a CRD, a
// controller making a Deployment per custom resource, a Ginkgo suite whose
// BeforeSuite starts envtest.Environment), whose tests see the garbage
// collector and the namespace controller at work, and controller-runtime's
// own suites.
func TestEnvtestAssets(t *testing.T) {
	assets := t.TempDir()
	if out, err := exec.Command(binary, "envtest-assets", assets).CombinedOutput(); err != nil {
		t.Fatalf("plainkube envtest-assets: %v\n%s", err, out)
	}
	goTest := func(t *testing.T, env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command("go", append([]string{"test", "-count=1"}, args...)...)
		cmd.Dir = "testdata/envtest-operator"
		cmd.Env = append(os.Environ(), append(env, "KUBEBUILDER_ASSETS="+assets, "GOFLAGS=")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go test %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	t.Run("kubebuilder project", func(t *testing.T) {
		// The Deployment's pods are made by the deployment and replicaset
		// controllers and run on a simulated node; the garbage collector
		// and namespace controller are on by default.
		out := goTest(t, []string{"PLAINKUBE_ENVTEST_CONTROLLERS=gc,namespace,deployment,replicaset", "PLAINKUBE_ENVTEST_SIM_NODES=1"},
			"-v", "./...")
		if !strings.Contains(out, "Ran 3 of 3 Specs") || !strings.Contains(out, "SUCCESS!") {
			t.Fatalf("the suite did not run its 3 specs:\n%s", out)
		}
		for _, re := range []string{`envtest started in \S+`, `deployment and pods collected \S+ after the WebApp was deleted`} {
			t.Log(regexp.MustCompile(re).FindString(out))
		}
	})

	t.Run("controller-runtime's suites", func(t *testing.T) {
		out := goTest(t, nil, controllerRuntimeSuites...)
		for _, pkg := range controllerRuntimeSuites {
			if !regexp.MustCompile(`(?m)^ok\s+` + regexp.QuoteMeta(pkg) + `\s`).MatchString(out) {
				t.Errorf("%s did not pass:\n%s", pkg, out)
			}
		}
		t.Log(out)
	})
}
