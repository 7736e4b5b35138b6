package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/devcluster"
)

// TestNetworkPolicy is issue #21's NetworkPolicy walk-through (see
// networkPolicyWalkthrough) on the single-node cluster.
func TestNetworkPolicy(t *testing.T) {
	requireRealNode(t)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft (nftables) is not installed")
	}
	c := startCluster(t, "--enable-node", "--bind-address", "0.0.0.0", "--cluster-cidr", "10.121.0.0/16", "--dns-upstream", fakeUpstream(t))
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	buildNettool(t, c.dataDir)
	networkPolicyWalkthrough(t, c, "", "")
}

// TestNetworkPolicyOnDevCluster is the walk-through across the hosts of a
// dev cluster (network namespaces, the host-gw pod network): the server
// pod on agent2, its clients on agent1, so each agent's own enforcer
// programs its pods and the policies hold between nodes.
func TestNetworkPolicyOnDevCluster(t *testing.T) {
	requireDevCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, c := upDevCluster(t, ctx, devcluster.Options{Agents: 2}, nettoolImageTar(t))
	networkPolicyWalkthrough(t, c, "agent2", "agent1")
}

// networkPolicyWalkthrough is issue #21's NetworkPolicy walk-through, with
// kubectl, in a namespace of its own (the server pod on serverNode and its
// clients on clientNode, if given): a default-deny policy blocks all
// ingress (but the kubelet's probes), an allow policy for app=client on
// port 8080 admits exactly that client — by the pod's address and through
// its Service — and deleting the policies restores traffic; then an
// egress policy whose ipBlock excepts the server's node's pod range stops
// one client from reaching the pods there, and only that client.
func networkPolicyWalkthrough(t *testing.T, c *cluster, serverNode, clientNode string) {
	t.Cleanup(func() {
		c.run("delete", "namespace", "np", "--wait=false")
		c.eventually([]string{"No resources found"}, "get", "pods", "-n", "np")
	})
	placement := func(node string) string {
		if node == "" {
			return ""
		}
		return "\n  nodeSelector: {kubernetes.io/hostname: " + node + "}"
	}
	c.must("apply", "-f", writeFile(t, t.TempDir(), "pods.yaml", strings.NewReplacer("\n  serverNode:", placement(serverNode), "\n  clientNode:", placement(clientNode)).Replace(`apiVersion: v1
kind: Namespace
metadata: {name: np}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: np, labels: {app: server}}
spec:
  serverNode:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: nettool:e2e
    imagePullPolicy: Never
    command: ["nettool", "serve", "-port", "8080"]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1, failureThreshold: 2}
---
apiVersion: v1
kind: Service
metadata: {name: server, namespace: np}
spec:
  selector: {app: server}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: np, labels: {app: client}}
spec:
  clientNode:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: nettool:e2e, imagePullPolicy: Never, command: ["nettool", "pause"]}
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: np, labels: {app: other}}
spec:
  clientNode:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: nettool:e2e, imagePullPolicy: Never, command: ["nettool", "pause"]}
`)))
	waitPods(t, c, "--for=condition=Ready", "-n", "np", "pod/server", "pod/client", "pod/other")
	serverIP := c.must("get", "pod", "server", "-n", "np", "-o", "jsonpath={.status.podIP}")
	clusterIP := c.must("get", "svc", "server", "-n", "np", "-o", "jsonpath={.spec.clusterIP}")
	direct, service := "http://"+serverIP+":8080", "http://"+clusterIP

	// reaches reports whether pod from gets an answer from url.
	reaches := func(from, url string) (bool, string) {
		out, err := c.run("exec", "-n", "np", from, "--", "nettool", "get", "-timeout", "700ms", url)
		return err == nil && strings.HasPrefix(strings.TrimSpace(out), "server"), out
	}
	// expect waits until it is so (at most 5 s) and says how long that took.
	expect := func(from, url string, want bool) {
		t.Helper()
		start := time.Now()
		waitFor(t, 5*time.Second, from+" → "+url+" reachable="+map[bool]string{true: "yes", false: "no"}[want], func() (bool, string) {
			ok, out := reaches(from, url)
			return ok == want, out
		})
		t.Logf("%s → %s reachable=%v within %v", from, url, want, time.Since(start).Round(10*time.Millisecond))
	}
	expect("client", direct, true)
	expect("other", direct, true)
	expect("other", service, true)

	c.must("apply", "-f", writeFile(t, t.TempDir(), "deny.yaml", `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: np}
spec:
  podSelector: {}
  policyTypes: [Ingress]
`))
	expect("client", direct, false)
	expect("other", direct, false)
	expect("other", service, false)
	// The kubelet's probes come from the node: the server stays Ready.
	time.Sleep(3 * time.Second)
	if ready := c.must("get", "pod", "server", "-n", "np", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`); ready != "True" {
		t.Fatalf("the server's readiness under default-deny: %q (the node's probes must pass)", ready)
	}

	c.must("apply", "-f", writeFile(t, t.TempDir(), "allow.yaml", `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-client, namespace: np}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: client}}}]
    ports: [{port: 8080}]
`))
	expect("client", direct, true)
	expect("client", service, true)
	expect("other", direct, false)
	expect("other", service, false)

	c.must("delete", "networkpolicy", "-n", "np", "default-deny", "allow-client")
	expect("other", direct, true)
	expect("other", service, true)

	// Egress by address: other may go anywhere but to the server's node's
	// pods (by the pod's address or, after the Service's DNAT, through it).
	serverPods := c.must("get", "node", c.must("get", "pod", "server", "-n", "np", "-o", "jsonpath={.spec.nodeName}"), "-o", "jsonpath={.spec.podCIDR}")
	c.must("apply", "-f", writeFile(t, t.TempDir(), "egress.yaml", `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: not-to-the-server-node, namespace: np}
spec:
  podSelector: {matchLabels: {app: other}}
  policyTypes: [Egress]
  egress:
  - to: [{ipBlock: {cidr: 0.0.0.0/0, except: [`+serverPods+`]}}]
`))
	expect("other", direct, false)
	expect("other", service, false)
	expect("client", direct, true)
	c.must("delete", "networkpolicy", "-n", "np", "not-to-the-server-node")
	expect("other", direct, true)
}
