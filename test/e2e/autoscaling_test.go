package e2e

import (
	"strings"
	"testing"
)

// hpaDeployment is a Deployment of simulated pods each declaring 80 % of
// its CPU request as usage.
const hpaDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: busy}
spec:
  replicas: 1
  selector: {matchLabels: {app: busy}}
  template:
    metadata:
      labels: {app: busy}
      annotations: {sim.plainkube.dev/cpu-usage: 80m, sim.plainkube.dev/memory-usage: 32Mi}
    spec:
      containers:
      - name: busy
        image: busybox:1.37
        resources: {requests: {cpu: 100m, memory: 64Mi}}
`

// TestAutoscaleSimulatedPods: kubectl autoscale a Deployment whose
// simulated pods use 80 % of their CPU request against a 50 % target; the
// controller (at its default 15 s period) scales it up to the maximum,
// and kubectl get/describe hpa and kubectl top (pods and nodes) show what
// it read.
func TestAutoscaleSimulatedPods(t *testing.T) {
	c := startCluster(t, "--sim-nodes", "2")
	c.eventually([]string{"sim-0", "sim-1"}, "get", "nodes")
	dir := t.TempDir()
	c.must("apply", "-f", writeFile(t, dir, "busy.yaml", hpaDeployment))
	c.must("rollout", "status", "deployment/busy", "--timeout=60s")
	c.eventually([]string{"80m", "32Mi"}, "top", "pod", "-l", "app=busy")
	// A simulated node's usage is its pods'.
	c.eventually([]string{"sim-0", "sim-1", "80m", "32Mi"}, "top", "node")

	out := c.must("autoscale", "deployment", "busy", "--cpu-percent=50", "--min=1", "--max=5")
	contains(t, out, "horizontalpodautoscaler.autoscaling/busy autoscaled")
	out = c.eventually([]string{"cpu: 80%/50%", "5 "}, "get", "hpa", "busy")
	contains(t, out, "REFERENCE", "Deployment/busy", "MINPODS")
	c.eventually([]string{"5"}, "get", "deployment", "busy", "-o", "jsonpath={.spec.replicas}")

	out = c.must("describe", "hpa", "busy")
	contains(t, out,
		"SuccessfulRescale",
		"New size: 2; reason: cpu resource utilization (percentage of request) above target",
		"New size: 5; reason: cpu resource utilization (percentage of request) above target",
		"ScalingLimited  True    TooManyReplicas",
	)
	if strings.Contains(out, "FailedGetResourceMetric") && !strings.Contains(out, "did not receive metrics") {
		t.Errorf("the controller could not read the metrics:\n%s", out)
	}
}
