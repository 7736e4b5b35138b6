package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestRealNode runs a real container with the node agent on containerd
// (root only) and reads its log through the API server with kubectl.
func TestRealNode(t *testing.T) {
	requireRealNode(t)
	c := startCluster(t, "--enable-node")
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	buildBusybox(t, c.dataDir, "sh,echo,sleep")
	c.must("apply", "-f", writeFile(t, t.TempDir(), "pod.yaml", `apiVersion: v1
kind: Pod
metadata: {name: hello}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "echo hello-from-a-container; echo second line; sleep 3600"]
`))
	c.eventually([]string{"Running"}, "get", "pod", "hello")
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := c.run("logs", "hello")
		if strings.Contains(out, "hello-from-a-container\nsecond line") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl logs: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out := c.must("logs", "hello", "--tail=1"); strings.TrimSpace(out) != "second line" {
		t.Fatalf("logs --tail=1: %q", out)
	}
	c.must("delete", "pod", "hello", "--timeout=30s")
}

// TestRealNodeDeploymentNetworking runs a Deployment of 3 busybox replicas
// on the real node: each gets its own pod IP and reaches the others.
func TestRealNodeDeploymentNetworking(t *testing.T) {
	requireRealNode(t)
	// A pod range of its own (outside the service range 10.96.0.0/12):
	// the node agent's package tests may be using 10.42.0.0/24 on the
	// same host bridge at the same time.
	c := startCluster(t, "--enable-node", "--cluster-cidr", "10.121.0.0/16")
	// Containers outlive the agent, so remove them before the server stops
	// (cleanups run last first).
	t.Cleanup(func() {
		c.run("delete", "deployment", "web", "--wait=false")
		c.run("delete", "pod", "prober", "--wait=false")
		c.eventually([]string{"No resources found"}, "get", "pods")
	})
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	buildBusybox(t, c.dataDir, "sh,echo,sleep,httpd,wget,mkdir,hostname")
	c.must("apply", "-f", writeFile(t, t.TempDir(), "web.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: busybox:e2e
        imagePullPolicy: Never
        command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && httpd -f -p 8080 -h /www"]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
`))
	c.must("rollout", "status", "deployment/web", "--timeout=90s")
	ips := strings.Fields(c.must("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.podIP}"))
	if len(ips) != 3 || ips[0] == ips[1] || ips[1] == ips[2] || ips[0] == ips[2] {
		t.Fatalf("pod IPs %v, want 3 distinct", ips)
	}
	for _, ip := range ips {
		if !strings.HasPrefix(ip, "10.121.") {
			t.Fatalf("pod IP %s outside the cluster CIDR", ip)
		}
	}
	// From another pod, fetch the page every replica serves.
	c.must("apply", "-f", writeFile(t, t.TempDir(), "probe.yaml", `apiVersion: v1
kind: Pod
metadata: {name: prober}
spec:
  restartPolicy: Never
  containers:
  - name: p
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "wget -qO- http://`+ips[0]+`:8080/ && wget -qO- http://`+ips[1]+`:8080/ && wget -qO- http://`+ips[2]+`:8080/"]
`))
	deadline := time.Now().Add(60 * time.Second)
	for {
		phase := c.must("get", "pod", "prober", "-o", "jsonpath={.status.phase}")
		if phase == "Succeeded" {
			break
		}
		if phase == "Failed" || time.Now().After(deadline) {
			logs, _ := c.run("logs", "prober")
			t.Fatalf("prober %s: %s", phase, logs)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if logs := c.must("logs", "prober"); len(strings.Fields(logs)) != 3 {
		t.Fatalf("prober fetched %q, want the 3 pods' host names", logs)
	}
}
