package printers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/upstreamsrc"
)

// knownTableGaps are the kinds upstream's printers have a table for that
// this package has none for (their resources use Default), each with why.
var knownTableGaps = map[schema.GroupKind]string{
	{Group: "internal.apiserver.k8s.io", Kind: "StorageVersion"}:  whyNotServed,
	{Group: "resource.k8s.io", Kind: "ResourcePoolStatusRequest"}: whyNotServed,
	{Group: "scheduling.k8s.io", Kind: "Workload"}:                whyNotServed,
	{Group: "scheduling.k8s.io", Kind: "PodGroup"}:                whyNotServed,
	{Group: "scheduling.k8s.io", Kind: "CompositePodGroup"}:       whyNotServed,
	{Group: "lifecycle.k8s.io", Kind: "EvictionRequest"}:          whyNotServed,
	{Group: "lifecycle.k8s.io", Kind: "Eviction"}:                 whyNotServed,
	{Group: "coordination.k8s.io", Kind: "LeaseCandidate"}:        whyNotServed,
	// Upstream's registry serves these with the default table although a
	// printer exists (storage's NewDefaultTableConvertor), as plainkube does.
	{Group: "storage.k8s.io", Kind: "CSIStorageCapacity"}: "upstream's registry uses the default table, not its printer",
}

const whyNotServed = "an alpha or beta API upstream serves only with its feature gate or API version on; plainkube does not serve it"

// ownTables are kinds plainkube prints whose upstream table is not among
// internalversion's printers.
var ownTables = map[schema.GroupKind]schema.GroupKind{
	// events.k8s.io Events are printed as core Events (one internal type).
	{Group: "events.k8s.io", Kind: "Event"}: {Kind: "Event"},
}

// TestColumnsMatchUpstream compares each table's columns (name, type,
// format, priority, in order) with those upstream's kube-apiserver
// declares for the kind: the TableColumnDefinition lists of AddHandlers in
// k8s.io/kubernetes' pkg/printers/internalversion, read from the module
// cache, and the kind each is registered for (the first parameter of the
// print function handed to TableHandler). Descriptions are not compared:
// upstream builds them from SwaggerDoc at run time.
func TestColumnsMatchUpstream(t *testing.T) {
	dir := upstreamsrc.KubernetesDir(t)
	upstream, err := upstreamColumns(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(upstream) < 50 {
		t.Fatalf("found only %d kinds in upstream's printers: the parsing is broken", len(upstream))
	}
	ours := map[schema.GroupKind][]metav1.TableColumnDefinition{}
	for _, gvk := range Kinds() {
		// Kinds shown with the default table (Role, LimitRange...) have no
		// printer upstream either: the check below that upstream has
		// none for them comes from their absence here.
		if spec := For(gvk); spec != Default() {
			ours[gvk.GroupKind()] = spec.Columns
		}
	}
	for gk, as := range ownTables {
		if cols, ok := ours[gk]; ok {
			if a, b := describe(cols), describe(upstream[as]); a != b {
				t.Errorf("%s columns (as %s):\n got %s\nwant %s", gk, as, a, b)
			}
			delete(ours, gk)
		}
	}
	// apiregistration's APIService table is kube-aggregator's own, not
	// one of kube-apiserver's printers.
	apiService := schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}
	if want, err := aggregatorColumns(); err != nil {
		t.Error(err)
	} else if a, b := describe(ours[apiService]), describe(want); a != b {
		t.Errorf("%s columns:\n got %s\nwant %s", apiService, a, b)
	}
	delete(ours, apiService)
	compared := 0
	for gk, want := range upstream {
		got, ok := ours[gk]
		if !ok {
			if _, known := knownTableGaps[gk]; !known {
				t.Errorf("%s: upstream prints it with its own table, plainkube has none", gk)
			}
			continue
		}
		if a, b := describe(got), describe(want); a != b {
			t.Errorf("%s columns:\n got %s\nwant %s", gk, a, b)
		}
		compared++
	}
	t.Logf("%d kinds' tables compared with upstream's", compared)
	for gk := range knownTableGaps {
		if _, ok := ours[gk]; ok {
			t.Errorf("%s has a table now: remove it from knownTableGaps", gk)
		}
		if _, ok := upstream[gk]; !ok {
			t.Errorf("%s: upstream has no table for it: remove it from knownTableGaps", gk)
		}
	}
	for gk := range ours {
		if _, ok := upstream[gk]; !ok {
			t.Errorf("%s: plainkube has a table upstream's printers do not", gk)
		}
	}
}

func describe(cols []metav1.TableColumnDefinition) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("%s/%s/%s/%d", c.Name, c.Type, c.Format, c.Priority)
	}
	return strings.Join(parts, ", ")
}

// upstreamColumns reads upstream's tables by group and kind.
func upstreamColumns(moduleDir string) (map[schema.GroupKind][]metav1.TableColumnDefinition, error) {
	path := filepath.Join(moduleDir, "pkg", "printers", "internalversion", "printers.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	// Import names of the internal API packages, by the group each registers.
	groups := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		rest, ok := strings.CutPrefix(p, "k8s.io/kubernetes/pkg/apis/")
		if !ok || strings.Contains(rest, "/") {
			continue
		}
		name := rest
		if imp.Name != nil {
			name = imp.Name.Name
		}
		g, err := groupName(filepath.Join(moduleDir, "pkg", "apis", rest))
		if err != nil {
			return nil, err
		}
		groups[name] = g
	}
	lists := map[string][]metav1.TableColumnDefinition{} // variable → columns
	handlers := map[string]string{}                      // print function → variable
	funcs := map[string]*ast.FuncDecl{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		funcs[fd.Name.Name] = fd
		if fd.Name.Name != "AddHandlers" {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if len(n.Lhs) != 1 || len(n.Rhs) != 1 {
					break
				}
				id, ok := n.Lhs[0].(*ast.Ident)
				if !ok {
					break
				}
				switch rhs := n.Rhs[0].(type) {
				case *ast.CompositeLit: // x := []metav1.TableColumnDefinition{...}
					lists[id.Name] = columnsOf(rhs)
				case *ast.CallExpr: // x = append(x, []metav1.TableColumnDefinition{...}...)
					if fn, ok := rhs.Fun.(*ast.Ident); ok && fn.Name == "append" && len(rhs.Args) == 2 {
						if cl, ok := rhs.Args[1].(*ast.CompositeLit); ok {
							lists[id.Name] = append(lists[id.Name], columnsOf(cl)...)
						}
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "TableHandler" && len(n.Args) == 2 {
					cols, ok1 := n.Args[0].(*ast.Ident)
					fn, ok2 := n.Args[1].(*ast.Ident)
					if ok1 && ok2 {
						handlers[fn.Name] = cols.Name
					}
				}
			}
			return true
		})
	}
	out := map[schema.GroupKind][]metav1.TableColumnDefinition{}
	for fn, cols := range handlers {
		fd := funcs[fn]
		if fd == nil || len(fd.Type.Params.List) == 0 {
			return nil, fmt.Errorf("print function %s not found", fn)
		}
		star, ok := fd.Type.Params.List[0].Type.(*ast.StarExpr)
		if !ok {
			continue
		}
		sel, ok := star.X.(*ast.SelectorExpr)
		if !ok {
			continue
		}
		pkg := sel.X.(*ast.Ident).Name
		group, ok := groups[pkg]
		if !ok {
			continue // metav1.Status and the like
		}
		kind := sel.Sel.Name
		if strings.HasSuffix(kind, "List") && strings.HasSuffix(fn, "List") {
			continue
		}
		out[schema.GroupKind{Group: group, Kind: kind}] = lists[cols]
	}
	return out, nil
}

// aggregatorColumns reads the APIService table of kube-aggregator (the
// module this one requires): the column list of its registry's
// ConvertToTable.
func aggregatorColumns() ([]metav1.TableColumnDefinition, error) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kube-aggregator").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m k8s.io/kube-aggregator: %w", err)
	}
	path := filepath.Join(strings.TrimSpace(string(dir)), "pkg", "registry", "apiservice", "etcd", "etcd.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	var cols []metav1.TableColumnDefinition
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return cols == nil
		}
		if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "ColumnDefinitions" {
			if cl, ok := kv.Value.(*ast.CompositeLit); ok {
				cols = columnsOf(cl)
			}
		}
		return cols == nil
	})
	if len(cols) == 0 {
		return nil, fmt.Errorf("%s: no ColumnDefinitions", path)
	}
	return cols, nil
}

// columnsOf reads a []metav1.TableColumnDefinition literal: the fields
// given as literals (Description is an expression, left out).
func columnsOf(cl *ast.CompositeLit) []metav1.TableColumnDefinition {
	var out []metav1.TableColumnDefinition
	for _, e := range cl.Elts {
		el, ok := e.(*ast.CompositeLit)
		if !ok {
			continue
		}
		var c metav1.TableColumnDefinition
		for _, kv := range el.Elts {
			kv, ok := kv.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			lit, ok := kv.Value.(*ast.BasicLit)
			if !ok {
				continue
			}
			switch kv.Key.(*ast.Ident).Name {
			case "Name":
				c.Name, _ = strconv.Unquote(lit.Value)
			case "Type":
				c.Type, _ = strconv.Unquote(lit.Value)
			case "Format":
				c.Format, _ = strconv.Unquote(lit.Value)
			case "Priority":
				p, _ := strconv.Atoi(lit.Value)
				c.Priority = int32(p)
			}
		}
		out = append(out, c)
	}
	return out
}

// groupName reads the GroupName constant of an internal API package.
func groupName(dir string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "register.go"), nil, 0)
	if err != nil {
		return "", err
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range gd.Specs {
			vs, ok := s.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "GroupName" || len(vs.Values) != 1 {
				continue
			}
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
				return strconv.Unquote(lit.Value)
			}
		}
	}
	return "", fmt.Errorf("%s: no GroupName constant", dir)
}
