package bootstrap

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestMatchesUpstreamGoldenFiles compares the whole policy, object by object,
// with upstream's golden files (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata
// in k8s.io/kubernetes). They are not part of this repository; point
// PLAINKUBE_UPSTREAM_RBAC_TESTDATA at that directory of the release to
// compare with, e.g. from `go mod download k8s.io/kubernetes@v1.37.2`:
//
//	PLAINKUBE_UPSTREAM_RBAC_TESTDATA=$GOMODCACHE/k8s.io/kubernetes@v1.37.2/plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata
func TestMatchesUpstreamGoldenFiles(t *testing.T) {
	dir := os.Getenv("PLAINKUBE_UPSTREAM_RBAC_TESTDATA")
	if dir == "" {
		t.Skip("PLAINKUBE_UPSTREAM_RBAC_TESTDATA not set")
	}
	var roles []rbacv1.ClusterRole
	var bindings []rbacv1.ClusterRoleBinding
	var nsRoles []rbacv1.Role
	var nsBindings []rbacv1.RoleBinding
	readGolden(t, filepath.Join(dir, "cluster-roles.yaml"), &roles)
	readGolden(t, filepath.Join(dir, "controller-roles.yaml"), &roles)
	readGolden(t, filepath.Join(dir, "cluster-role-bindings.yaml"), &bindings)
	readGolden(t, filepath.Join(dir, "controller-role-bindings.yaml"), &bindings)
	readGolden(t, filepath.Join(dir, "namespace-roles.yaml"), &nsRoles)
	readGolden(t, filepath.Join(dir, "namespace-role-bindings.yaml"), &nsBindings)

	d := Default()
	compareObjects(t, "ClusterRole", d.ClusterRoles, roles, func(o rbacv1.ClusterRole) string { return o.Name })
	compareObjects(t, "ClusterRoleBinding", d.ClusterRoleBindings, bindings, func(o rbacv1.ClusterRoleBinding) string { return o.Name })
	compareObjects(t, "Role", d.Roles, nsRoles, func(o rbacv1.Role) string { return o.Namespace + "/" + o.Name })
	compareObjects(t, "RoleBinding", d.RoleBindings, nsBindings, func(o rbacv1.RoleBinding) string { return o.Namespace + "/" + o.Name })
}

func readGolden[T any](t *testing.T, path string, into *[]T) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []T `json:"items"`
	}
	if err := yaml.Unmarshal(data, &list); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	*into = append(*into, list.Items...)
}

// compareObjects matches ours and upstream's by key and compares each pair
// as JSON (TypeMeta and creationTimestamp aside).
func compareObjects[T any](t *testing.T, kind string, ours, theirs []T, key func(T) string) {
	t.Helper()
	norm := func(o T) string {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "kind")
		delete(m, "apiVersion")
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "creationTimestamp")
		}
		b, _ = json.MarshalIndent(m, "", " ")
		return string(b)
	}
	want := map[string]string{}
	for _, o := range theirs {
		want[key(o)] = norm(o)
	}
	got := map[string]string{}
	for _, o := range ours {
		got[key(o)] = norm(o)
	}
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s %s: upstream has it, we do not", kind, k)
		case g != w:
			t.Errorf("%s %s differs from upstream\n--- ours\n%s\n--- upstream\n%s", kind, k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s %s: we have it, upstream does not", kind, k)
		}
	}
	if !reflect.DeepEqual(len(ours), len(theirs)) {
		t.Errorf("%s: %d of ours, %d upstream", kind, len(ours), len(theirs))
	}
}
