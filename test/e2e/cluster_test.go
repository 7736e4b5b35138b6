package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const webDeploymentFastStop = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      # Evicted 1 s after the node is unreachable, not the default 300 s.
      tolerations:
        - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 1}
      containers:
        - name: web
          image: busybox:1.36
          ports: [{containerPort: 8080, name: http}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
`

// TestClusterOnSimulatedNodes drives the whole control plane as a user
// would: simulated nodes, the scheduler and the controllers.
func TestClusterOnSimulatedNodes(t *testing.T) {
	c := startCluster(t, "--sim-nodes", "3")
	c.eventually([]string{"sim-0", "sim-1", "sim-2", "sim://plainkube"}, "get", "nodes", "-o", "wide")
	if out := c.must("get", "nodes", "-o", "jsonpath={.items[*].status.conditions[?(@.type==\"Ready\")].status}"); out != "True True True" {
		t.Fatalf("nodes not Ready: %q", out)
	}
	dir := t.TempDir()
	c.must("apply", "-f", writeFile(t, dir, "web.yaml", webDeploymentFastStop))
	c.must("rollout", "status", "deployment/web", "--timeout=60s")
	out := c.must("get", "pods", "-l", "app=web", "-o", "wide")
	if strings.Count(out, "Running") != 3 || !strings.Contains(out, "sim-") {
		t.Fatalf("pods:\n%s", out)
	}
	// The Service's EndpointSlice lists exactly the ready pods.
	c.eventually([]string{"true true true"}, "get", "endpointslices", "-l", "kubernetes.io/service-name=web", "-o", "jsonpath={.items[*].endpoints[*].conditions.ready}")

	// A rolling update and an undo.
	c.must("set", "image", "deployment/web", "web=busybox:1.37")
	c.must("rollout", "status", "deployment/web", "--timeout=60s")
	c.must("rollout", "undo", "deployment/web")
	c.must("rollout", "status", "deployment/web", "--timeout=60s")
	if img := c.must("get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); img != "busybox:1.36" {
		t.Fatalf("after undo: image %q", img)
	}
	out = c.must("describe", "deployment", "web")
	contains(t, out, "ScalingReplicaSet", "deployment-controller")

	// A deleted pod is replaced.
	// (Pods of the old ReplicaSet may still be going away; pick again if
	// the one picked is gone.)
	for i := 0; ; i++ {
		first := strings.Fields(c.must("get", "pods", "-l", "app=web", "-o", "name"))[0]
		out, err := c.run("delete", first, "--wait=false")
		if err == nil {
			break
		}
		if !strings.Contains(out, "NotFound") || i == 20 {
			t.Fatalf("kubectl delete %s: %v\n%s", first, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.eventually([]string{"3/3"}, "get", "deploy", "web")

	// Logs of a simulated pod say why there are none.
	c.must("run", "simlog", "--image=busybox")
	c.eventually([]string{"Running"}, "get", "pod", "simlog")
	out = c.mustFail("logs", "simlog")
	contains(t, out, "simulated")

	// A pod that fits nowhere stays Pending and says why, then runs once a
	// node fits.
	c.must("run", "picky", "--image=busybox", "--restart=Never", "--overrides", `{"spec":{"nodeSelector":{"disktype":"ssd"}}}`)
	out = c.eventually([]string{"0/3 nodes are available", "didn't match Pod's node affinity/selector"}, "describe", "pod", "picky")
	contains(t, out, "FailedScheduling")
	c.must("label", "node", "sim-1", "disktype=ssd")
	c.eventually([]string{"Running"}, "get", "pod", "picky")
	if node := c.must("get", "pod", "picky", "-o", "jsonpath={.spec.nodeName}"); node != "sim-1" {
		t.Fatalf("picky pod on %q, want sim-1", node)
	}

	// Foreground deletion removes the ReplicaSets and pods before the Deployment.
	c.must("delete", "deployment", "web", "--cascade=foreground", "--timeout=60s")
	c.eventually([]string{"No resources found"}, "get", "rs,pods", "-l", "app=web")
}

// TestStoppedNodeEvictsPods stops a simulated node: once its heartbeats
// are missed for the grace period the node lifecycle controller taints it
// and evicts its pods, and the Deployment runs them on the other nodes.
func TestStoppedNodeEvictsPods(t *testing.T) {
	c := startCluster(t, "--sim-nodes", "3", "--node-monitor-grace-period", "4s")
	c.eventually([]string{"sim-2"}, "get", "nodes")
	dir := t.TempDir()
	c.must("apply", "-f", writeFile(t, dir, "web.yaml", webDeploymentFastStop))
	c.must("rollout", "status", "deployment/web", "--timeout=60s")
	victim := c.must("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].spec.nodeName}")
	c.must("annotate", "node", victim, "sim.plainkube.dev/stopped=true")
	c.eventually([]string{"node.kubernetes.io/unreachable"}, "get", "node", victim, "-o", "jsonpath={.spec.taints}")
	c.eventually([]string{"Unknown"}, "get", "node", victim, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
	// Three running replicas, none on the stopped node.
	deadline := 0
	for {
		out := c.must("get", "pods", "-l", "app=web", "--field-selector", "status.phase=Running", "-o", "jsonpath={range .items[?(@.metadata.deletionTimestamp)]}x{end}{range .items[*]}{.spec.nodeName} {end}")
		onOthers := 0
		for _, n := range strings.Fields(out) {
			if n != victim && !strings.HasPrefix(n, "x") {
				onOthers++
			}
		}
		if onOthers >= 3 {
			break
		}
		if deadline++; deadline > 600 {
			t.Fatalf("pods not moved off %s: %s", victim, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The node comes back when it heartbeats again.
	c.must("annotate", "node", victim, "sim.plainkube.dev/stopped-")
	c.eventually([]string{"True"}, "get", "node", victim, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
}

// TestSimAgainstAnotherServer joins simulated nodes to a running cluster
// with `plainkube sim`, as one would to any cluster, and its scheduler uses them.
func TestSimAgainstAnotherServer(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim := exec.CommandContext(ctx, binary, "sim", "--kubeconfig", c.kubeconfig(), "--nodes", "2", "--name-prefix", "joined-")
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); sim.Wait() }()
	c.eventually([]string{"joined-0", "joined-1", "Ready"}, "get", "nodes")
	c.must("run", "p", "--image=busybox", "--restart=Never")
	c.eventually([]string{"Running"}, "get", "pod", "p")
	contains(t, c.must("get", "pod", "p", "-o", "jsonpath={.spec.nodeName}"), "joined-")
}

// TestClientToServerSideApplyMigration applies a manifest client-side, then
// server-side with the same content: kubectl's migration path needs no force.
func TestClientToServerSideApplyMigration(t *testing.T) {
	c := startCluster(t)
	f := writeFile(t, t.TempDir(), "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: migrate}\ndata: {a: \"1\", b: \"2\"}\n")
	c.must("apply", "-f", f)
	contains(t, c.must("apply", "--server-side", "-f", f), "serverside-applied")
	out := c.must("get", "cm", "migrate", "-o", "yaml", "--show-managed-fields")
	contains(t, out, "manager: kubectl", "operation: Apply")
}

// TestJobOnSimulatedNodes: a Job whose pods carry the sim exit annotations
// completes, and kubectl wait sees it.
func TestJobOnSimulatedNodes(t *testing.T) {
	c := startCluster(t, "--sim-nodes", "2")
	c.eventually([]string{"sim-1"}, "get", "nodes")
	c.must("apply", "-f", writeFile(t, t.TempDir(), "job.yaml", `apiVersion: batch/v1
kind: Job
metadata: {name: work}
spec:
  completions: 3
  parallelism: 2
  template:
    metadata:
      annotations: {sim.plainkube.dev/exit-after: 1s, sim.plainkube.dev/exit-code: "0"}
    spec:
      restartPolicy: Never
      containers: [{name: w, image: busybox}]
`))
	c.must("wait", "--for=condition=complete", "job/work", "--timeout=60s")
	out := c.must("get", "job", "work")
	contains(t, out, "Complete", "3/3")
}
