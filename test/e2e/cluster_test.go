package e2e

import (
	"strings"
	"testing"
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
	first := strings.Fields(c.must("get", "pods", "-l", "app=web", "-o", "name"))[0]
	c.must("delete", first, "--wait=false")
	c.eventually([]string{"3/3"}, "get", "deploy", "web")

	// Logs of a simulated pod say why there are none.
	out = c.mustFail("logs", first)
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
