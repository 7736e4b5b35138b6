package upstreamsrc

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// KubernetesVersion is the kube-apiserver plainkube follows.
const KubernetesVersion = "v1.37.2"

// ModuleDir is the folder of module at version in the module cache,
// downloaded from the module proxy if need be (within 5 minutes).
func ModuleDir(module, version string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s %v", module, version, out, err)
	}
	return m.Dir, nil
}

// KubernetesDir is the folder of k8s.io/kubernetes at KubernetesVersion in
// the module cache; the test fails if it cannot be had.
func KubernetesDir(t testing.TB) string {
	t.Helper()
	dir, err := ModuleDir("k8s.io/kubernetes", KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
