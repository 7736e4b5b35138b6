package e2e

import (
	"strings"
	"testing"
)

// TestKubectlCascadeAndNamespaceDeletion checks deletes that need the
// controllers: foreground and orphan cascades, and a namespace that empties
// and goes away while kubectl waits.
func TestKubectlCascadeAndNamespaceDeletion(t *testing.T) {
	c := startCluster(t)
	dir := t.TempDir()
	c.must("create", "configmap", "owner")
	uid := c.must("get", "cm", "owner", "-o", "jsonpath={.metadata.uid}")
	dep := func(name string) string {
		return writeFile(t, dir, name+".yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: `+name+`
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: `+uid+`, blockOwnerDeletion: true}
`)
	}
	c.must("create", "-f", dep("dep1"))
	c.must("delete", "cm", "owner", "--cascade=foreground", "--wait=true", "--timeout=30s")
	c.mustFail("get", "cm", "dep1")

	c.must("create", "configmap", "owner")
	uid = c.must("get", "cm", "owner", "-o", "jsonpath={.metadata.uid}")
	c.must("create", "-f", dep("dep2"))
	c.must("delete", "cm", "owner", "--cascade=orphan", "--wait=true", "--timeout=30s")
	if refs := c.must("get", "cm", "dep2", "-o", "jsonpath={.metadata.ownerReferences}"); refs != "" {
		t.Fatalf("orphaned dependent still has owner references: %s", refs)
	}

	c.must("create", "ns", "doomed")
	c.must("create", "configmap", "x", "-n", "doomed")
	c.must("create", "secret", "generic", "y", "-n", "doomed", "--from-literal=a=b")
	out := c.must("delete", "ns", "doomed", "--timeout=60s")
	contains(t, out, `namespace "doomed" deleted`)
	c.mustFail("get", "ns", "doomed")
}

// TestKubectlServerSideApplyAndSurface covers server-side apply with its
// conflicts, discovery-driven commands and explain.
func TestKubectlServerSideApplyAndSurface(t *testing.T) {
	c := startCluster(t)
	dir := t.TempDir()
	f := writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {owner: first}\n")
	out := c.must("apply", "--server-side", "-f", f)
	contains(t, out, "configmap/ssa serverside-applied")
	out = c.must("get", "cm", "ssa", "-o", "yaml", "--show-managed-fields")
	contains(t, out, "manager: kubectl", "operation: Apply")
	writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {owner: second}\n")
	out = c.mustFail("apply", "--server-side", "--field-manager=other", "-f", f)
	contains(t, out, "conflict")
	c.must("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", f)
	if got := c.must("get", "cm", "ssa", "-o", "jsonpath={.data.owner}"); got != "second" {
		t.Fatalf("after forced apply: %q", got)
	}

	out = c.must("api-resources")
	contains(t, out, "deployments", "deploy", "apps/v1", "true", "Deployment", "configmaps", "cm", "namespaces", "ns", "leases")
	out = c.must("api-versions")
	contains(t, out, "apps/v1", "batch/v1", "coordination.k8s.io/v1", "v1")
	out = c.must("explain", "pods.spec.containers.livenessProbe")
	contains(t, out, "KIND:", "Pod", "FIELD: livenessProbe", "Periodic probe of container liveness")
	c.must("create", "deployment", "web", "--image=busybox", "--replicas=2")
	out = c.must("get", "all")
	contains(t, out, "service/kubernetes", "deployment.apps/web")
	out = c.must("scale", "deployment", "web", "--replicas=4")
	contains(t, out, "deployment.apps/web scaled")
	if got := c.must("get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"); got != "4" {
		t.Fatalf("after scale: %q", got)
	}
	c.must("rollout", "pause", "deployment/web")
	c.must("rollout", "resume", "deployment/web")
	c.must("rollout", "restart", "deployment/web")
	if got := c.must("get", "deploy", "web", "-o", "jsonpath={.spec.template.metadata.annotations}"); !strings.Contains(got, "kubectl.kubernetes.io/restartedAt") {
		t.Fatalf("rollout restart did not annotate the template: %q", got)
	}
	// diff exits 1 when it finds differences, and changes nothing.
	out, err := c.run("diff", "-f", writeFile(t, dir, "d.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {owner: third}\n"))
	if err == nil || !strings.Contains(out, "+  owner: third") {
		t.Fatalf("diff: %v\n%s", err, out)
	}
	if got := c.must("get", "cm", "ssa", "-o", "jsonpath={.data.owner}"); got != "second" {
		t.Fatalf("diff changed the object: %q", got)
	}
	out = c.must("get", "deploy", "-o", "custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas")
	contains(t, out, "NAME", "REPLICAS", "web", "4")
	c.must("create", "configmap", "b")
	c.must("create", "configmap", "a")
	out = c.must("get", "cm", "--sort-by=.metadata.name", "-o", "name")
	if !strings.Contains(out, "configmap/a\nconfigmap/b\n") {
		t.Fatalf("sort-by: %s", out)
	}
	out = c.must("auth", "can-i", "create", "pods")
	contains(t, out, "yes")
	out = c.must("auth", "whoami")
	contains(t, out, "kubernetes-admin", "system:masters")
	c.must("wait", "--for=jsonpath={.data.owner}=second", "cm/ssa", "--timeout=10s")
	c.must("delete", "cm", "a", "--wait=false")
	c.must("wait", "--for=delete", "cm/a", "--timeout=10s")
}
