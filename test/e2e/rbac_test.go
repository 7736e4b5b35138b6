package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRBAC: the server holds upstream's default roles, and a
// ServiceAccount may do what its bindings grant and no more — with the
// real kubectl, its token, and upstream's 403 message.
func TestRBAC(t *testing.T) {
	c := startCluster(t)
	roles := c.must("get", "clusterroles", "-o", "name")
	contains(t, roles, "clusterrole.rbac.authorization.k8s.io/cluster-admin\n", "clusterrole.rbac.authorization.k8s.io/view\n",
		"clusterrole.rbac.authorization.k8s.io/edit\n", "clusterrole.rbac.authorization.k8s.io/system:node\n",
		"clusterrole.rbac.authorization.k8s.io/system:controller:deployment-controller\n")
	contains(t, c.must("get", "clusterrolebindings", "cluster-admin", "-o", "jsonpath={.subjects[0].name}"), "system:masters")
	// view is filled by aggregation from system:aggregate-to-view.
	c.eventually([]string{"pods"}, "get", "clusterrole", "view", "-o", "jsonpath={.rules[*].resources}")

	c.must("create", "namespace", "team")
	c.must("create", "serviceaccount", "bot", "-n", "team")
	token := strings.TrimSpace(c.must("create", "token", "bot", "-n", "team"))
	asBot := func(args ...string) (string, error) {
		return c.run(append([]string{"--kubeconfig", "/dev/null", "--server", fmt.Sprintf("https://127.0.0.1:%d", c.port),
			"--certificate-authority", filepath.Join(c.dataDir, "pki", "ca.crt"), "--token", token}, args...)...)
	}
	out, err := asBot("get", "pods", "-n", "team")
	if err == nil || !strings.Contains(out, `User "system:serviceaccount:team:bot" cannot list resource "pods" in API group "" in the namespace "team"`) {
		t.Fatalf("an unbound ServiceAccount listed pods: %v\n%s", err, out)
	}
	c.must("create", "rolebinding", "bot-view", "--clusterrole=view", "--serviceaccount=team:bot", "-n", "team")
	// The binding reaches the authorizer through its watch cache.
	for i := 0; ; i++ {
		out, err := asBot("get", "pods", "-n", "team")
		if err == nil {
			break
		}
		if i == 100 {
			t.Fatalf("a ServiceAccount bound to view cannot list pods: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, err = asBot("create", "deployment", "web", "--image=nginx", "-n", "team")
	if err == nil || !strings.Contains(out, `deployments.apps is forbidden: User "system:serviceaccount:team:bot" cannot create resource "deployments" in API group "apps" in the namespace "team"`) {
		t.Fatalf("view let a ServiceAccount create a deployment: %v\n%s", err, out)
	}
	if out, err := asBot("get", "pods", "-n", "default"); err == nil {
		t.Fatalf("a RoleBinding in team granted pods in default:\n%s", out)
	}
	if out, err := asBot("get", "secrets", "-n", "team"); err == nil {
		t.Fatalf("view granted secrets:\n%s", out)
	}

	// kubectl auth can-i --list: the rules its bindings grant, complete.
	out, err = asBot("auth", "can-i", "--list", "-n", "team")
	if err != nil || !strings.Contains(out, "pods ") || !strings.Contains(out, "[get list watch]") ||
		!strings.Contains(out, "selfsubjectreviews.authentication.k8s.io") || strings.Contains(out, "secrets ") || strings.Contains(strings.ToLower(out), "incomplete") {
		t.Fatalf("auth can-i --list: %v\n%s", err, out)
	}

	// Impersonation: the admin acts as the ServiceAccount and gets what it
	// gets; the ServiceAccount may not impersonate anyone.
	contains(t, c.must("auth", "can-i", "--list", "-n", "team", "--as=system:serviceaccount:team:bot"), "[get list watch]")
	out = c.mustFail("get", "secrets", "-n", "team", "--as=system:serviceaccount:team:bot")
	contains(t, out, `User "system:serviceaccount:team:bot" cannot list resource "secrets"`)
	out = c.mustFail("get", "pods", "--as=bob", "--as-group=dev")
	contains(t, out, `User "bob" cannot list resource "pods" in API group "" in the namespace "default"`)
	out, err = asBot("get", "pods", "-n", "team", "--as=alice")
	if err == nil || !strings.Contains(out, `users "alice" is forbidden: User "system:serviceaccount:team:bot" cannot impersonate resource "users" in API group "" at the cluster scope`) {
		t.Fatalf("a ServiceAccount impersonated a user: %v\n%s", err, out)
	}

	// Escalation prevention: the right to write RBAC objects is not the
	// right to grant what one does not hold.
	c.must("create", "role", "rbac-writer", "--verb=create,get,list", "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io", "-n", "team")
	c.must("create", "rolebinding", "bot-rbac-writer", "--role=rbac-writer", "--serviceaccount=team:bot", "-n", "team")
	for i := 0; ; i++ { // wait for the binding to reach the authorizer
		if _, err := asBot("get", "rolebindings", "-n", "team"); err == nil {
			break
		} else if i == 100 {
			t.Fatal("the rbac-writer binding never took effect")
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, err = asBot("create", "rolebinding", "bot-admin", "--clusterrole=cluster-admin", "--serviceaccount=team:bot", "-n", "team")
	if err == nil || !strings.Contains(out, `rolebindings.rbac.authorization.k8s.io "bot-admin" is forbidden: user "system:serviceaccount:team:bot"`) ||
		!strings.Contains(out, "is attempting to grant RBAC permissions not currently held") {
		t.Fatalf("a ServiceAccount bound itself to cluster-admin: %v\n%s", err, out)
	}
	out, err = asBot("create", "role", "pod-maker", "--verb=create", "--resource=pods", "-n", "team")
	if err == nil || !strings.Contains(out, `{APIGroups:[""], Resources:["pods"], Verbs:["create"]}`) {
		t.Fatalf("a ServiceAccount made a role with rules it does not hold: %v\n%s", err, out)
	}
	// What it holds it may grant.
	if out, err := asBot("create", "role", "pod-reader", "--verb=get,list", "--resource=pods", "-n", "team"); err != nil {
		t.Fatalf("a role within the creator's rules was refused: %v\n%s", err, out)
	}
	if out, err := asBot("create", "rolebinding", "other-view", "--clusterrole=view", "--serviceaccount=team:default", "-n", "team"); err != nil {
		t.Fatalf("binding a role the creator holds was refused: %v\n%s", err, out)
	}

	// kubectl auth reconcile creates a Role and its binding, changes
	// nothing when run again, and adds the rules a changed file adds.
	dir := t.TempDir()
	manifest := func(verbs string) string {
		return writeFile(t, dir, "rbac.yaml", `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reconciled, namespace: team}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [`+verbs+`]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reconciled, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reconciled}
subjects:
- {kind: ServiceAccount, name: bot, namespace: team}
`)
	}
	out = c.must("auth", "reconcile", "-f", manifest("get"))
	contains(t, out, "role.rbac.authorization.k8s.io/reconciled reconciled", "rolebinding.rbac.authorization.k8s.io/reconciled reconciled",
		"reconciliation required create", "missing rules added", "missing subjects added")
	rv := c.must("get", "role,rolebinding", "reconciled", "-n", "team", "-o", "jsonpath={.items[*].metadata.resourceVersion}")
	out = c.must("auth", "reconcile", "-f", manifest("get"))
	contains(t, out, "role.rbac.authorization.k8s.io/reconciled reconciled")
	if strings.Contains(out, "reconciliation required") {
		t.Fatalf("reconciling again changed something:\n%s", out)
	}
	if again := c.must("get", "role,rolebinding", "reconciled", "-n", "team", "-o", "jsonpath={.items[*].metadata.resourceVersion}"); again != rv {
		t.Fatalf("reconciling again wrote the objects: resourceVersions %s, then %s", rv, again)
	}
	out = c.must("auth", "reconcile", "-f", manifest("get, list"))
	contains(t, out, "reconciliation required update", "missing rules added")
	contains(t, c.must("get", "role", "reconciled", "-n", "team", "-o", "jsonpath={.rules[*].verbs}"), "list")
}

// TestComponentIdentities: what each built-in identity may do is
// upstream's — the scheduler reads no Secrets; a node reads only the
// Secrets of its own pods and asks tokens only for their ServiceAccounts
// (upstream's Node authorizer, its graph fed by the pods bound to each
// node), and reads only its own Node.
func TestComponentIdentities(t *testing.T) {
	c := startCluster(t)
	if out, _ := c.run("auth", "can-i", "get", "secrets", "-A", "--as=system:kube-scheduler"); strings.TrimSpace(out) != "no" {
		t.Fatalf("system:kube-scheduler may read Secrets: %s", out)
	}
	contains(t, c.must("auth", "can-i", "create", "pods", "--subresource=binding", "--as=system:kube-scheduler"), "yes")
	contains(t, c.must("auth", "can-i", "create", "replicasets.apps", "--as=system:serviceaccount:kube-system:deployment-controller",
		"--as-group=system:serviceaccounts"), "yes")
	if out, _ := c.run("auth", "can-i", "get", "secrets", "--as=system:serviceaccount:kube-system:deployment-controller", "--as-group=system:serviceaccounts"); strings.TrimSpace(out) != "no" {
		t.Fatalf("the deployment controller may read Secrets: %s", out)
	}

	// A pod bound to node n1 (no such node runs: the binding is what
	// relates them) uses the Secret "used", not "unused".
	c.must("create", "secret", "generic", "used", "--from-literal=k=v")
	c.must("create", "secret", "generic", "unused", "--from-literal=k=v")
	c.must("create", "serviceaccount", "app")
	c.must("apply", "-f", writeFile(t, t.TempDir(), "pod.yaml", `apiVersion: v1
kind: Pod
metadata: {name: on-n1}
spec:
  nodeName: n1
  serviceAccountName: app
  containers:
  - name: c
    image: busybox
    env:
    - name: K
      valueFrom: {secretKeyRef: {name: used, key: k}}
`))
	asNode := func(node string, args ...string) (string, error) {
		return c.run(append([]string{"--as=system:node:" + node, "--as-group=system:nodes"}, args...)...)
	}
	// The graph sees the pod through its watch.
	for i := 0; ; i++ {
		out, err := asNode("n1", "get", "secret", "used", "-o", "name")
		if err == nil {
			break
		}
		if i == 100 {
			t.Fatalf("node n1 cannot read the Secret its pod uses: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, err := asNode("n1", "get", "secret", "unused")
	if err == nil || !strings.Contains(out, `secrets "unused" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'n1' and this object`) {
		t.Fatalf("node n1 read a Secret no pod of it uses: %v\n%s", err, out)
	}
	if out, err := asNode("n2", "get", "secret", "used"); err == nil {
		t.Fatalf("node n2 read the Secret of a pod on n1:\n%s", out)
	}
	if out, err := asNode("n1", "get", "secrets"); err == nil {
		t.Fatalf("a node listed Secrets:\n%s", out)
	}
	uid := c.must("get", "pod", "on-n1", "-o", "jsonpath={.metadata.uid}")
	if out, err := asNode("n1", "create", "token", "app", "--bound-object-kind=Pod", "--bound-object-name=on-n1", "--bound-object-uid="+uid); err != nil {
		t.Fatalf("node n1 cannot get a token for its pod's ServiceAccount: %v\n%s", err, out)
	}
	out, err = asNode("n1", "create", "token", "default", "--bound-object-kind=Pod", "--bound-object-name=on-n1", "--bound-object-uid="+uid)
	if err == nil || !strings.Contains(out, "no relationship found between node 'n1' and this object") {
		t.Fatalf("node n1 got a token for a ServiceAccount no pod of it uses: %v\n%s", err, out)
	}
	// Nodes list and watch every Node through plainkube:node-network (the
	// pod network routes to each node's podCIDR, as flannel's role lets
	// it); without that binding, the Node authorizer's own answer.
	if out, err := asNode("n1", "get", "nodes"); err != nil {
		t.Fatalf("a node cannot list Nodes with plainkube:node-network: %v\n%s", err, out)
	}
	c.must("delete", "clusterrolebinding", "plainkube:node-network")
	for i := 0; ; i++ {
		out, err = asNode("n1", "get", "nodes")
		if err != nil && strings.Contains(out, "node 'n1' cannot read all nodes, only its own Node object") {
			break
		}
		if i == 50 {
			t.Fatalf("a node listed every Node without plainkube:node-network: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// NodeRestriction: a node writes its own Node only, and not its
	// node-restriction.kubernetes.io labels; it creates only mirror pods
	// and deletes only its own pods.
	c.must("apply", "-f", writeFile(t, t.TempDir(), "nodes.yaml", `apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
`))
	// (replace: a PUT with no read first, which the node may not do.)
	out, err = asNode("n1", "replace", "-f", writeFile(t, t.TempDir(), "n2.yaml", `apiVersion: v1
kind: Node
metadata: {name: n2, labels: {team: x}}
`))
	if err == nil || !strings.Contains(out, `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`) {
		t.Fatalf("node n1 changed node n2: %v\n%s", err, out)
	}
	out, err = asNode("n1", "label", "node", "n1", "node-restriction.kubernetes.io/pool=a")
	if err == nil || !strings.Contains(out, `nodes "n1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/pool`) {
		t.Fatalf("node n1 set a node-restriction.kubernetes.io label on itself: %v\n%s", err, out)
	}
	if out, err := asNode("n1", "label", "node", "n1", "kubelet.kubernetes.io/ok=yes", "team=x"); err != nil {
		t.Fatalf("node n1 cannot set labels a kubelet may set: %v\n%s", err, out)
	}
	c.must("apply", "-f", writeFile(t, t.TempDir(), "pod.yaml", `apiVersion: v1
kind: Pod
metadata: {name: on-n2}
spec:
  nodeName: n2
  containers:
  - {name: c, image: busybox}
`))
	out, err = asNode("n1", "delete", "pod", "on-n2", "--wait=false")
	if err == nil || !strings.Contains(out, `pods "on-n2" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself`) {
		t.Fatalf("node n1 deleted a pod of node n2: %v\n%s", err, out)
	}
	out, err = asNode("n1", "run", "mine", "--image=busybox")
	if err == nil || !strings.Contains(out, `pods "mine" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods`) {
		t.Fatalf("node n1 created a pod that is not a mirror pod: %v\n%s", err, out)
	}

	// Once the pod is gone (the node deletes its own), so is the node's access.
	if out, err := asNode("n1", "delete", "pod", "on-n1", "--grace-period=0", "--force", "--wait=false"); err != nil {
		t.Fatalf("node n1 cannot delete its own pod: %v\n%s", err, out)
	}
	for i := 0; ; i++ {
		if _, err := asNode("n1", "get", "secret", "used"); err != nil {
			break
		}
		if i == 100 {
			t.Fatal("node n1 still reads the Secret of a pod that is gone")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
