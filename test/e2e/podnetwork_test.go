package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/devcluster"
	"plainkube.dev/plainkube/internal/network"
)

// TestPodNetworkAcrossHosts runs a cluster of three hosts (network
// namespaces, devcluster) with each pod network backend: a 6-replica
// Deployment spread over the three nodes, every pod reaches every other
// pod's address and sees the caller's own pod address (no NAT), and a pod
// reaches the Service's pods on the other nodes, again by its own
// address. Root only.
func TestPodNetworkAcrossHosts(t *testing.T) {
	requireDevCluster(t)
	tar := nettoolImageTar(t)
	for _, backend := range []network.Backend{network.HostGW, network.VXLAN} {
		t.Run(string(backend), func(t *testing.T) { testPodNetwork(t, backend, tar) })
	}
}

func testPodNetwork(t *testing.T, backend network.Backend, imageTar string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dc, c := upDevCluster(t, ctx, devcluster.Options{Agents: 2, PodNetwork: string(backend)}, imageTar)
	c.must("apply", "-f", writeFile(t, t.TempDir(), "web.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
      containers:
      - name: web
        image: nettool:e2e
        imagePullPolicy: Never
        command: ["nettool", "serve", "-port", "8080"]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`))
	// Containers outlive their agent: the Deployment goes before down.
	t.Cleanup(func() { c.run("delete", "deployment", "web", "--timeout=30s", "--wait") })
	c.eventually([]string{"6/6"}, "get", "deployment", "web")

	type pod struct{ name, ip, node string }
	var pods []pod
	out := c.must("get", "pods", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.metadata.name} {.status.podIP} {.spec.nodeName}{\"\\n\"}{end}")
	perNode := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("pod line %q", line)
		}
		pods = append(pods, pod{f[0], f[1], f[2]})
		perNode[f[2]]++
	}
	t.Logf("pods: %v", pods)
	if len(perNode) != 3 {
		t.Fatalf("the pods are on %d nodes, want 3: %v", len(perNode), perNode)
	}
	nodes := c.must("get", "nodes", "-o", "custom-columns=NAME:.metadata.name,NET:.status.conditions[?(@.type=='NetworkUnavailable')].reason,VTEP:.metadata.annotations.plainkube\\.dev/vxlan-ip", "--no-headers")
	t.Logf("nodes:\n%s", nodes)
	if strings.Count(nodes, network.ReasonRoutesCreated) != 3 {
		t.Errorf("every node should say %s", network.ReasonRoutesCreated)
	}

	// Every pod reaches every other pod, by its own address.
	started := time.Now()
	for _, from := range pods {
		for _, to := range pods {
			if from.name == to.name {
				continue
			}
			got := strings.TrimSpace(c.mustStdout("exec", from.name, "--", "nettool", "get", fmt.Sprintf("http://%s/source", netipPort(t, to.ip, 8080))))
			if got != from.ip {
				t.Errorf("%s (%s, on %s) → %s (on %s): seen from %s, want its own address", from.name, from.ip, from.node, to.ip, to.node, got)
			}
		}
	}
	t.Logf("30 pod-to-pod requests across %d nodes in %s", len(perNode), time.Since(started).Round(time.Millisecond))

	// Pod → Service → pod on another node, keeping the pod's address: a
	// client outside the Service (a pod sent to itself through its Service
	// is masqueraded, as upstream's proxies do), on agent1.
	c.must("apply", "-f", writeFile(t, t.TempDir(), "client.yaml", `apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  nodeSelector: {kubernetes.io/hostname: agent1}
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: nettool:e2e, imagePullPolicy: Never, command: ["nettool", "pause"]}
`))
	t.Cleanup(func() { c.run("delete", "pod", "client", "--timeout=30s", "--wait") })
	c.eventually([]string{"Running"}, "get", "pod", "client")
	clientIP := c.must("get", "pod", "client", "-o", "jsonpath={.status.podIP}")
	clusterIP := c.must("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
	answers := c.mustStdout("exec", "client", "--", "nettool", "get", "-n", "30", fmt.Sprintf("http://%s/", netipPort(t, clusterIP, 80)))
	other := 0
	for _, p := range pods {
		if p.node != "agent1" && strings.Contains(answers, p.name) {
			other++
		}
	}
	if other == 0 {
		t.Errorf("30 requests to the Service from agent1: no answer from a pod on another node:\n%s", answers)
	}
	sources := c.mustStdout("exec", "client", "--", "nettool", "get", "-n", "10", fmt.Sprintf("http://%s/source", netipPort(t, clusterIP, 80)))
	if f := strings.Fields(sources); len(f) != 10 || strings.Count(sources, clientIP) != 10 {
		t.Errorf("through the Service, the client %s was seen from:\n%s", clientIP, sources)
	}

	// The routes the nodes hold, for the log.
	for _, h := range dc.Hosts {
		if out, err := exec.Command("ip", "-n", h.Netns, "route", "show", "proto", fmt.Sprint(network.RouteProtocol)).CombinedOutput(); err == nil {
			t.Logf("%s's routes:\n%s", h.NodeName, out)
		}
	}
}

func netipPort(t *testing.T, ip string, port uint16) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		t.Fatalf("address %q: %v", ip, err)
	}
	return netip.AddrPortFrom(a, port).String()
}
