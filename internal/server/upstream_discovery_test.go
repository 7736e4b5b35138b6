package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/upstreamsrc"
)

// knownDiscoveryGaps are the differences from upstream's discovery that
// are known and not mended yet (issue #19), as the test prints them. The
// test fails on any other difference, and on an entry here that no longer
// happens, so this list only shrinks.
var knownDiscoveryGaps []string

// TestDiscoveryMatchesUpstream compares every resource list the server
// serves with upstream's published discovery documents
// (api/discovery/*.json of the k8s.io/kubernetes module at upstreamsrc.KubernetesVersion,
// fetched into the module cache by the go command, not committed) for the
// group-versions upstream serves by default (the GA ones): the same
// resources and subresources, with the same kind, scope, verbs, short names,
// categories and singular name.
func TestDiscoveryMatchesUpstream(t *testing.T) {
	dir := upstreamsrc.KubernetesDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "api", "discovery", "ap*__*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no discovery documents under %s: %v", dir, err)
	}
	_, cfg := startServer(t)
	dc := clientset(t, cfg).Discovery()
	ga := regexp.MustCompile(`^v[0-9]+$`)
	var diffs []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var want metav1.APIResourceList
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		gv, err := parseGroupVersion(want.GroupVersion)
		if err != nil || !ga.MatchString(gv) {
			continue
		}
		got, err := dc.ServerResourcesForGroupVersion(want.GroupVersion)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: not served", want.GroupVersion))
			continue
		}
		diffs = append(diffs, compareResources(want.GroupVersion, want.APIResources, got.APIResources)...)
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		if !slices.Contains(knownDiscoveryGaps, d) {
			t.Errorf("differs from upstream %s: %s", upstreamsrc.KubernetesVersion, d)
		}
	}
	for _, k := range knownDiscoveryGaps {
		if !slices.Contains(diffs, k) {
			t.Errorf("known gap %q no longer happens: remove it from knownDiscoveryGaps", k)
		}
	}
}

func parseGroupVersion(gv string) (string, error) {
	if i := strings.LastIndex(gv, "/"); i >= 0 {
		return gv[i+1:], nil
	}
	return gv, nil
}

func compareResources(gv string, want, got []metav1.APIResource) []string {
	index := func(rs []metav1.APIResource) map[string]metav1.APIResource {
		m := map[string]metav1.APIResource{}
		for _, r := range rs {
			m[r.Name] = r
		}
		return m
	}
	w, g := index(want), index(got)
	var diffs []string
	for name, wr := range w {
		gr, ok := g[name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s %s: missing", gv, name))
			continue
		}
		field := func(what string, a, b any) {
			if fmt.Sprint(a) != fmt.Sprint(b) {
				diffs = append(diffs, fmt.Sprintf("%s %s: %s %v, upstream %v", gv, name, what, b, a))
			}
		}
		sorted := func(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }
		field("kind", wr.Kind, gr.Kind)
		field("namespaced", wr.Namespaced, gr.Namespaced)
		field("verbs", sorted(wr.Verbs), sorted(gr.Verbs))
		field("shortNames", sorted(wr.ShortNames), sorted(gr.ShortNames))
		field("categories", sorted(wr.Categories), sorted(gr.Categories))
		field("singularName", wr.SingularName, gr.SingularName)
	}
	for name := range g {
		if _, ok := w[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s %s: not served upstream", gv, name))
		}
	}
	return diffs
}
