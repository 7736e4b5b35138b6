package e2e

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/kubelet/network"
	"plainkube.dev/plainkube/internal/pki"
)

// TestJoinNode joins a second node with `plainkube agent` (TLS bootstrap
// with the server's token and CA pin) on the same host, with its own data
// directory, containerd and API port: both nodes are Ready with pod ranges
// of their own, and a pod on the second node runs on its own bridge and
// its log is read and a command run in it through the API server. Root
// only.
func TestJoinNode(t *testing.T) {
	requireRealNode(t)
	agentDir := t.TempDir()
	// Last of all, once the server's node is gone too: what the agent's
	// node left (its bridge).
	t.Cleanup(func() {
		if out, err := exec.Command(binary, "cleanup", "--data-dir", agentDir).CombinedOutput(); err != nil {
			t.Errorf("plainkube cleanup of the agent: %v: %s", err, out)
		}
	})
	// A pod range of its own, away from other tests' bridges.
	c := startCluster(t, "--enable-node", "--cluster-cidr", "10.93.0.0/16")
	token, err := os.ReadFile(filepath.Join(c.dataDir, "join-token"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(c.dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}

	const node2 = "e2e-joined"
	server := fmt.Sprintf("https://127.0.0.1:%d", c.port)
	// The server's node already runs the host's service proxy, DNS and
	// NetworkPolicy enforcer (one table each per host).
	common := []string{"--data-dir", agentDir, "--node-name", node2, "--port", "10251", "--disable-proxy", "--disable-dns", "--disable-network-policy"}
	agent := startAgent(t, append([]string{"--server", server, "--token", strings.TrimSpace(string(token)), "--ca-cert-hash", pki.CertHash(ca)}, common...))
	t.Cleanup(func() { agent.stop(t) }) // whichever agent runs then
	// Containers outlive their agent: remove the pod first (cleanups run
	// last first).
	t.Cleanup(func() { c.run("delete", "pod", "on-joined", "--timeout=30s") })

	c.eventually([]string{node2, "Ready"}, "get", "node", node2)
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	// Its certificates came through CSRs that were approved and issued.
	csrs := c.must("get", "csr", "-o", "custom-columns=REQUESTOR:.spec.username,SIGNER:.spec.signerName,STATUS:.status.conditions[0].type")
	contains(t, csrs, "system:bootstrap:", "kubernetes.io/kube-apiserver-client-kubelet", "system:node:"+node2, "kubernetes.io/kubelet-serving", "Approved")
	t.Logf("CSRs:\n%s", csrs)
	if strings.Contains(csrs, "Pending") || strings.Contains(csrs, "Failed") {
		t.Fatalf("CSRs:\n%s", csrs)
	}
	// Each node has a pod range of its own.
	cidr := ""
	deadline := time.Now().Add(30 * time.Second)
	for cidr == "" && time.Now().Before(deadline) {
		cidr = c.must("get", "node", node2, "-o", "jsonpath={.spec.podCIDR}")
		time.Sleep(200 * time.Millisecond)
	}
	cidrs := strings.Fields(c.must("get", "nodes", "-o", "jsonpath={.items[*].spec.podCIDR}"))
	t.Logf("pod CIDRs %v", cidrs)
	if len(cidrs) != 2 || cidrs[0] == cidrs[1] || !strings.HasPrefix(cidr, "10.93.") {
		t.Fatalf("pod CIDRs %v (joined node: %q)", cidrs, cidr)
	}

	buildBusybox(t, agentDir, "sh,echo,sleep")
	c.must("apply", "-f", writeFile(t, t.TempDir(), "pod.yaml", `apiVersion: v1
kind: Pod
metadata: {name: on-joined}
spec:
  nodeName: `+node2+`
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "echo hello-from-the-joined-node; sleep 3600"]
`))
	c.eventually([]string{"Running"}, "get", "pod", "on-joined")
	ip := c.must("get", "pod", "on-joined", "-o", "jsonpath={.status.podIP}")
	prefix := netip.MustParsePrefix(cidr)
	if addr, err := netip.ParseAddr(ip); err != nil || !prefix.Contains(addr) {
		t.Fatalf("pod IP %q outside the joined node's range %s", ip, cidr)
	}
	if out, err := exec.Command("ip", "link", "show", network.BridgeName(prefix)).CombinedOutput(); err != nil {
		t.Fatalf("the joined node's bridge %s: %v %s", network.BridgeName(prefix), err, out)
	}
	// kubectl logs: the API server reaches the joined agent on its port.
	deadline = time.Now().Add(30 * time.Second)
	for {
		out, _ := c.run("logs", "on-joined")
		if strings.Contains(out, "hello-from-the-joined-node") {
			t.Logf("pod %s on %s, log: %s", ip, node2, out)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl logs: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}

	if out := c.mustStdout("exec", "on-joined", "--", "echo", "exec-on-the-joined-node"); strings.TrimSpace(out) != "exec-on-the-joined-node" {
		t.Fatalf("kubectl exec on the joined node: %q", out)
	}
	// The joined agent's /metrics serves its own process's work queues.
	agentMetrics := c.mustStdout("get", "--raw", "/api/v1/nodes/"+node2+"/proxy/metrics")
	if v := sampleValue(agentMetrics, "workqueue_adds_total", `name="kubelet-pods"`); v < 1 {
		t.Errorf("the joined agent's workqueue_adds_total{name=\"kubelet-pods\"} = %v", v)
	}
	// Its serving certificate is the kubelet-serving CA's, which the API
	// server trusts for it, not the cluster CA clients trust.
	servingCA, err := os.ReadFile(filepath.Join(c.dataDir, "pki", "kubelet-serving-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	servingPEM, err := os.ReadFile(filepath.Join(agentDir, "pki", "kubelet-serving.crt"))
	if err != nil {
		t.Fatal(err)
	}
	serving, err := pki.ParseCertPEM(servingPEM)
	if err != nil {
		t.Fatal(err)
	}
	if sca, err := pki.ParseCertPEM(servingCA); err != nil || serving.CheckSignatureFrom(sca) != nil || serving.CheckSignatureFrom(ca) == nil {
		t.Fatalf("the joined node's serving certificate (issuer %s) is not the kubelet-serving CA's alone (%v)", serving.Issuer, err)
	}
	// A restart needs no token: the kept credentials are reused, no new
	// request is made, and the node keeps serving its pod's log.
	agent.stop(t)
	agent = startAgent(t, append([]string{"--server", server}, common...)) // the cleanup above stops it
	deadline = time.Now().Add(60 * time.Second)
	for !strings.Contains(agent.log.String(), "node registered") {
		if time.Now().After(deadline) {
			t.Fatalf("restarted agent did not register; its log:\n%s", agent.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	contains(t, agent.log.String(), "using the kept client certificate")
	if n := strings.Count(c.must("get", "csr", "-o", "name"), "\n"); n != 2 {
		t.Fatalf("%d CSRs after the restart, want the first 2", n)
	}
	c.eventually([]string{"hello-from-the-joined-node"}, "logs", "on-joined")
}

// agentProcess is one running `plainkube agent`.
type agentProcess struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

func startAgent(t *testing.T, args []string) *agentProcess {
	t.Helper()
	a := &agentProcess{log: &syncBuffer{}, done: make(chan struct{})}
	a.cmd = exec.Command(binary, append([]string{"agent"}, args...)...)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.cmd.Wait(); close(a.done) }()
	return a
}

// stop sends SIGTERM and waits; it may be called more than once.
func (a *agentProcess) stop(t *testing.T) {
	select {
	case <-a.done:
		return
	default:
	}
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(15 * time.Second):
		a.cmd.Process.Kill()
		<-a.done
		t.Errorf("agent did not stop within 15s of SIGTERM")
	}
	if t.Failed() {
		t.Logf("agent log:\n%s", a.log.String())
	}
}

// syncBuffer is a bytes.Buffer safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
