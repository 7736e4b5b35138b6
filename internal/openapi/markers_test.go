package openapi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMarkersUpToDate fails when markers_generated.go is not what
// gen_markers.go makes from the k8s.io/api this module requires (after a
// k8s.io/api upgrade: go generate ./internal/openapi).
func TestMarkersUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	out := filepath.Join(t.TempDir(), "markers_generated.go")
	cmd := exec.Command("go", "run", "gen_markers.go", "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run gen_markers.go: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("markers_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("markers_generated.go is out of date: run go generate ./internal/openapi")
	}
}

func TestMarkersDecideRequiredAndUnions(t *testing.T) {
	// +required on a field with omitempty, +optional on one without, and a
	// +union struct with its discriminator, as k8s.io/api v0.37 has them.
	if m := apiMarkers["io.k8s.api.apps.v1.Deployment"]["spec"]; !m.required {
		t.Errorf("Deployment.spec: %+v, want required", m)
	}
	if m := apiMarkers["io.k8s.api.events.v1.Event"]["metadata"]; !m.optional {
		t.Errorf("events.v1 Event.metadata: %+v, want optional", m)
	}
	u := apiUnions["io.k8s.api.core.v1.SeccompProfile"]
	if u.discriminator != "type" || u.members["localhostProfile"] != "LocalhostProfile" || len(u.members) != 1 {
		t.Errorf("SeccompProfile union: %+v", u)
	}
}
