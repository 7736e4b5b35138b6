package kubelet_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// TestRoomsDoNotImportTheAgent checks that the agent's rooms (its
// subpackages) import none of this package, which wires them: the agent
// depends on its rooms, never the other way round.
func TestRoomsDoNotImportTheAgent(t *testing.T) {
	const agent = "plainkube.dev/plainkube/internal/kubelet"
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	rooms := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.ImportPath == agent {
			continue
		}
		rooms++
		for _, imp := range p.Imports {
			if imp == agent {
				t.Errorf("%s imports %s", p.ImportPath, agent)
			}
		}
	}
	if rooms < 10 {
		t.Fatalf("go list found only %d rooms", rooms)
	}
}
