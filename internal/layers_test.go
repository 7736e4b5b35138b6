// The layering of the tree (docs/architecture.md): imports point down only.
// This test lists every package's imports with `go list` and fails on one
// that runs up a layer, or sideways from one component into another.
package internal_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "plainkube.dev/plainkube/"

// layers, from the top down. A package belongs to the entry with the
// longest matching prefix; a package may import packages of lower layers,
// and of its own layer only where the layer says so.
var layers = []struct {
	name     string
	prefixes []string
	// rooms: the layer's packages are separate components; one may import
	// its own subtree (its "room") but never another component's.
	rooms bool
	// serverSide: of the components, only the API server's may import the
	// layer (a controller or the node agent reads the API, not its registry).
	serverSide bool
}{
	{name: "programs", prefixes: []string{"cmd/", "examples/", "test/"}, rooms: true},
	{name: "drivers", prefixes: []string{"pkg/testenv", "internal/bench", "internal/controller/controllertest"}, rooms: true},
	// The multi-host harness: drives real binaries, below the benchmark that times it.
	{name: "harness", prefixes: []string{"internal/devcluster"}, rooms: true},
	{name: "wiring", prefixes: []string{"internal/server", "internal/node", "internal/controllermanager"}, rooms: true},
	{name: "components", rooms: true, prefixes: []string{
		"internal/apiserver", "internal/apiextensions", "internal/aggregator", "internal/controller", "internal/scheduler",
		"internal/kubelet", "internal/proxy", "internal/dns", "internal/network", "internal/netpol",
	}},
	{name: "api server libraries", serverSide: true, prefixes: []string{
		"internal/registry", "internal/auth", "internal/admission", "internal/audit", "internal/openapi", "internal/printers", "internal/webhook",
		"internal/loopback",
	}},
	{name: "foundations", prefixes: []string{
		"internal/api/", "internal/reconcile", "internal/storage", "internal/pki", "internal/image",
		"internal/version", "internal/resolvconf", "internal/mounts", "internal/procs", "internal/netfilter",
		"internal/upstreamsrc",
	}},
}

// controllerLibraries are the packages under internal/controller that are
// shared helpers rather than controllers: a controller may import these and
// internal/controller itself, never another controller.
var controllerLibraries = map[string]bool{
	"internal/controller":              true,
	"internal/controller/events":       true,
	"internal/controller/history":      true,
	"internal/controller/endpointutil": true,
}

// serverComponents are the components that serve the API.
var serverComponents = map[string]bool{"internal/apiserver": true, "internal/apiextensions": true, "internal/aggregator": true}

// extends names the component a component plugs into: it may import that
// one's packages as a scheduler plugin imports the scheduler framework.
var extends = map[string]string{"internal/apiextensions": "internal/apiserver", "internal/aggregator": "internal/apiserver"}

type placement struct {
	layer int    // index into layers; smaller is higher
	room  string // the matched prefix
}

func place(pkg string) (placement, bool) {
	best, bestLen := placement{}, -1
	for i, l := range layers {
		for _, p := range l.prefixes {
			if (pkg == strings.TrimSuffix(p, "/") || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/")) && len(p) > bestLen {
				best, bestLen = placement{layer: i, room: strings.TrimSuffix(p, "/")}, len(p)
			}
		}
	}
	return best, bestLen >= 0
}

// roomOf is the component a package belongs to: for programs its first two
// path elements (cmd/plainkube, test/e2e), else the matched prefix.
func roomOf(pkg string, p placement) string {
	if layers[p.layer].name == "programs" {
		parts := strings.SplitN(pkg, "/", 3)
		if len(parts) >= 2 {
			return parts[0] + "/" + parts[1]
		}
	}
	return p.room
}

// controllerOf is the controller a package under internal/controller
// belongs to (internal/controller/job, internal/controller/certificates/
// csrsigning), or "" for the library packages.
func controllerOf(pkg string) string {
	if !strings.HasPrefix(pkg, "internal/controller/") || controllerLibraries[pkg] {
		return ""
	}
	for lib := range controllerLibraries {
		if strings.HasPrefix(pkg, lib+"/") && lib != "internal/controller" {
			return ""
		}
	}
	parts := strings.Split(pkg, "/")
	if parts[2] == "certificates" && len(parts) > 3 {
		return strings.Join(parts[:4], "/")
	}
	return strings.Join(parts[:3], "/")
}

// violation says what is wrong with from importing to, or "".
func violation(from, to string) string {
	pf, ok := place(from)
	if !ok {
		return "is in no layer (add it to the table in internal/layers_test.go)"
	}
	pt, ok := place(to)
	if !ok {
		return "imports " + to + ", which is in no layer"
	}
	switch {
	case pt.layer < pf.layer:
		return "imports " + to + " from the higher layer " + layers[pt.layer].name
	case pt.layer == pf.layer && layers[pf.layer].rooms && roomOf(from, pf) != roomOf(to, pt) &&
		extends[roomOf(from, pf)] != roomOf(to, pt):
		return "imports " + to + ", another " + strings.TrimSuffix(layers[pf.layer].name, "s")
	case layers[pt.layer].serverSide && layers[pf.layer].name == "components" && !serverComponents[pf.room]:
		return "imports " + to + ", which only the API server's components may"
	}
	if cf, ct := controllerOf(from), controllerOf(to); cf != "" && ct != "" && cf != ct {
		return "imports " + to + ": a controller is not a library of another (move what they share below)"
	}
	return ""
}

func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var bad []string
	n := 0
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
		from := strings.TrimPrefix(p.ImportPath, module)
		if from == p.ImportPath || from == "internal" { // "internal": this test
			continue
		}
		n++
		if _, ok := place(from); !ok {
			bad = append(bad, from+" "+violation(from, from))
			continue
		}
		for _, imp := range p.Imports {
			to := strings.TrimPrefix(imp, module)
			if to == imp || to == from {
				continue
			}
			if v := violation(from, to); v != "" {
				bad = append(bad, from+" "+v)
			}
		}
	}
	if n < 50 {
		t.Fatalf("go list found only %d packages of the module", n)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// TestViolation keeps the rule itself honest: each kind of import it must
// refuse, and the kinds it must allow.
func TestViolation(t *testing.T) {
	for _, tt := range []struct {
		from, to string
		ok       bool
	}{
		{"internal/server", "internal/apiserver", true},
		{"internal/kubelet", "internal/api/podspec", true},
		{"internal/kubelet/sim", "internal/kubelet/nodestatus", true},
		{"internal/controller/job", "internal/controller", true},
		{"internal/controller/job", "internal/controller/events", true},
		{"internal/registry/core", "internal/registry", true},
		{"internal/apiserver", "internal/kubelet/usage", false},                       // component to component
		{"internal/kubelet", "internal/registry/core", false},                         // up a layer
		{"internal/controller/endpoints", "internal/controller/endpointslice", false}, // controller to controller
		{"internal/controller/certificates/csrapproving", "internal/controller/certificates/csrsigning", false},
		{"internal/api/podspec", "internal/registry", false},
		{"internal/storage", "internal/apiserver", false},
		{"internal/apiextensions/serving", "internal/apiserver", true},
		{"internal/apiserver", "internal/apiextensions", false},
		{"internal/controller/job", "internal/registry", false},
		{"internal/nosuchthing", "internal/storage", false},
	} {
		if got := violation(tt.from, tt.to) == ""; got != tt.ok {
			t.Errorf("%s -> %s allowed = %v, want %v (%s)", tt.from, tt.to, got, tt.ok, violation(tt.from, tt.to))
		}
	}
}
