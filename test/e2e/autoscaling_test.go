package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestAutoscaleRealPods: on a real node, a Deployment of pods that burn
// CPU (busybox spinning, held to 40m by their limit, against a request
// of 20m: about 200 % of it) is autoscaled at a 50 % target. The usage
// the controller reads is the node agent's (metrics.k8s.io from its
// /stats/summary); within 90 s of the HPA's creation the Deployment is
// scaled up to the maximum of 3.
func TestAutoscaleRealPods(t *testing.T) {
	c, _ := realNode(t, "sh")
	t.Cleanup(func() {
		c.run("delete", "deployment", "burn", "--wait=false")
		c.eventually([]string{"No resources found"}, "get", "pods")
	})
	c.must("apply", "-f", writeFile(t, t.TempDir(), "burn.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: burn}
spec:
  replicas: 1
  selector: {matchLabels: {app: burn}}
  template:
    metadata: {labels: {app: burn}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:e2e
        imagePullPolicy: Never
        command: ["sh", "-c", "while :; do :; done"]
        resources:
          requests: {cpu: 20m}
          limits: {cpu: 40m}
`))
	c.must("rollout", "status", "deployment/burn", "--timeout=60s")
	out := c.must("autoscale", "deployment", "burn", "--cpu-percent=50", "--min=1", "--max=3")
	contains(t, out, "horizontalpodautoscaler.autoscaling/burn autoscaled")
	start := time.Now()
	waitFor(t, 90*time.Second, "the Deployment scaled up to 3", func() (bool, string) {
		out, _ := c.run("get", "deployment", "burn", "-o", "jsonpath={.spec.replicas}")
		return out == "3", out
	})
	t.Logf("scaled up to 3 after %s", time.Since(start).Round(time.Second))
	out = c.must("describe", "hpa", "burn")
	t.Logf("kubectl describe hpa burn:\n%s", out)
	contains(t, out, "SuccessfulRescale", "cpu resource utilization (percentage of request) above target")
	// What it read: well above the target (a spinning pod held to twice
	// its request), shown as kubectl shows it.
	usage := regexp.MustCompile(`cpu: ([0-9]+)%/50%`)
	out = c.eventually([]string{"cpu: "}, "get", "hpa", "burn")
	m := usage.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("kubectl get hpa shows no CPU utilization:\n%s", out)
	}
	if pct, _ := strconv.Atoi(m[1]); pct < 100 {
		t.Errorf("utilization %d%% of a pod spinning at its 40m limit over a 20m request:\n%s", pct, out)
	}
}
