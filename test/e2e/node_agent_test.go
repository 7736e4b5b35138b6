package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// requireRealNode skips unless this host can run the node agent.
func requireRealNode(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: running real containers needs root (CI runs as root)")
	}
	for _, bin := range []string{"containerd", "runc", "ctr"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipping: %s is not installed (apt-get install containerd runc)", bin)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		t.Skip("skipping: the CNI plugins (containernetworking-plugins) are not installed")
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("skipping: /bin/busybox (busybox-static) is not installed")
	}
}

// buildBusybox builds the busybox:e2e image, with links (comma-separated
// applet names) in /bin, into the containerd of the node whose data
// directory is dataDir (a server's, or a joined agent's).
func buildBusybox(t *testing.T, dataDir, links string) {
	t.Helper()
	out, err := exec.Command(binary, "image", "build", "--data-dir", dataDir, "--tag", "busybox:e2e", "--binary", "/bin/busybox",
		"--links", links).CombinedOutput()
	if err != nil {
		t.Fatalf("image build: %v\n%s", err, out)
	}
}

// waitFor polls cond every 300 ms until it holds or limit passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last: %s", what, limit, last)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestNodeAgentChecks walks issue #8's checks with the real kubectl against
// 'plainkube server' and its default node: crash loops with growing
// back-off, liveness restarts, readiness, configMap updates in a running
// pod, env from a Secret and the downward API, and preStop on delete.
func TestNodeAgentChecks(t *testing.T) {
	requireRealNode(t)
	c := startCluster(t, "--enable-node", "--cluster-cidr", "10.122.0.0/16")
	t.Cleanup(func() {
		c.run("delete", "pods", "--all", "--grace-period=1", "--wait=false")
		c.eventually([]string{"No resources found"}, "get", "pods")
	})
	c.eventually([]string{"Ready", "control-plane"}, "get", "nodes")
	buildBusybox(t, c.dataDir, "sh,echo,sleep,cat,touch,rm,ls,date,httpd,wget,mkdir,hostname,env,tar,test")
	hostDir := t.TempDir()
	c.must("apply", "-f", writeFile(t, t.TempDir(), "pods.yaml", `apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  containers:
  - {name: c, image: busybox:e2e, imagePullPolicy: Never, command: ["sh", "-c", "echo crashed-at-$(date +%s%N); exit 1"]}
---
apiVersion: v1
kind: Pod
metadata: {name: sickly}
spec:
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; sleep 3600"]
    livenessProbe: {exec: {command: ["cat", "/tmp/healthy"]}, periodSeconds: 1, failureThreshold: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: slowready}
spec:
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "sleep 4; touch /tmp/ready; sleep 3600"]
    readinessProbe: {exec: {command: ["cat", "/tmp/ready"]}, periodSeconds: 1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {colour: blue}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: reader, labels: {tier: e2e}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "echo pw=$PASSWORD name=$POD_NAME ns=$POD_NS ip=$POD_IP node=$NODE; while true; do echo colour=$(cat /etc/settings/colour); sleep 1; done"]
    env:
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: creds, key: password}}}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    volumeMounts: [{name: settings, mountPath: /etc/settings}]
  volumes:
  - {name: settings, configMap: {name: settings}}
---
apiVersion: v1
kind: Pod
metadata: {name: stopper}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    lifecycle:
      preStop: {exec: {command: ["sh", "-c", "date > /host/prestop-ran"]}}
    volumeMounts: [{name: host, mountPath: /host}]
  volumes:
  - {name: host, hostPath: {path: `+hostDir+`}}
`))

	t.Run("crash loop with growing back-off", func(t *testing.T) {
		var seen []string
		backoff := regexp.MustCompile(`back-off (\d+s) restarting failed container`)
		waitFor(t, 60*time.Second, "back-off 10s then 20s", func() (bool, string) {
			out, _ := c.run("get", "pod", "crasher", "-o", "jsonpath={.status.containerStatuses[0].state.waiting.reason} {.status.containerStatuses[0].state.waiting.message}")
			if m := backoff.FindStringSubmatch(out); m != nil && strings.HasPrefix(out, "CrashLoopBackOff") {
				if len(seen) == 0 || seen[len(seen)-1] != m[1] {
					seen = append(seen, m[1])
				}
			}
			return strings.Contains(strings.Join(seen, ","), "10s,20s"), out
		})
		contains(t, c.must("get", "pod", "crasher"), "CrashLoopBackOff")
	})

	t.Run("logs of the previous instance", func(t *testing.T) {
		out := c.must("logs", "crasher", "--previous")
		if !strings.HasPrefix(out, "crashed-at-") {
			t.Fatalf("kubectl logs --previous: %q", out)
		}
	})

	t.Run("failing liveness probe restarts", func(t *testing.T) {
		waitFor(t, 40*time.Second, "a liveness restart", func() (bool, string) {
			out, _ := c.run("get", "pod", "sickly", "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
			return out != "" && out != "0", out
		})
		contains(t, c.must("get", "events", "--field-selector", "involvedObject.name=sickly"), "Liveness probe failed")
	})

	t.Run("readiness probe gates Ready", func(t *testing.T) {
		ready := func() string {
			out, _ := c.run("get", "pod", "slowready", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			return out
		}
		c.eventually([]string{"Running"}, "get", "pod", "slowready")
		started := c.must("get", "pod", "slowready", "-o", "jsonpath={.status.containerStatuses[0].state.running.startedAt}")
		startedAt, err := time.Parse(time.RFC3339, started)
		if err != nil {
			t.Fatalf("startedAt %q: %v", started, err)
		}
		if time.Since(startedAt) < 3*time.Second && ready() == "True" {
			t.Fatal("Ready before the readiness probe could pass")
		}
		waitFor(t, 30*time.Second, "Ready", func() (bool, string) { r := ready(); return r == "True", r })
	})

	t.Run("env from a secret and the downward API", func(t *testing.T) {
		c.eventually([]string{"Running"}, "get", "pod", "reader")
		ip := c.must("get", "pod", "reader", "-o", "jsonpath={.status.podIP}")
		node := c.must("get", "pod", "reader", "-o", "jsonpath={.spec.nodeName}")
		want := "pw=s3cret name=reader ns=default ip=" + ip + " node=" + node
		waitFor(t, 20*time.Second, "the env line", func() (bool, string) {
			out, _ := c.run("logs", "reader")
			return strings.Contains(out, want), out
		})
	})

	t.Run("logs -f streams lines as they are written", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.kubectl, "logs", "-f", "reader", "--since=1s")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig())
		out, _ := cmd.Output() // ends when the context does
		// The pod writes a line a second: a stream of 4 s has several,
		// though --since=1s started it with at most one old one.
		if n := strings.Count(string(out), "colour="); n < 3 {
			t.Fatalf("kubectl logs -f for 4 s gave %d lines: %q", n, out)
		}
		all := c.must("logs", "reader")
		if strings.Count(all, "\n") < 4 || strings.Count(c.must("logs", "reader", "--tail=2"), "\n") != 2 {
			t.Fatalf("logs --tail=2 of %q", all)
		}
	})

	t.Run("a configMap volume shows its update", func(t *testing.T) {
		waitFor(t, 20*time.Second, "colour=blue", func() (bool, string) {
			out, _ := c.run("logs", "reader", "--tail=1")
			return strings.Contains(out, "colour=blue"), out
		})
		c.must("patch", "configmap", "settings", "-p", `{"data":{"colour":"green"}}`)
		waitFor(t, 70*time.Second, "colour=green in the running pod", func() (bool, string) {
			out, _ := c.run("logs", "reader", "--tail=1")
			return strings.Contains(out, "colour=green"), out
		})
	})

	t.Run("delete runs preStop and stops within the grace period", func(t *testing.T) {
		c.eventually([]string{"Running"}, "get", "pod", "stopper")
		start := time.Now()
		c.must("delete", "pod", "stopper", "--timeout=30s")
		if took := time.Since(start); took > 12*time.Second {
			t.Fatalf("delete took %s, more than the 10 s grace period", took)
		}
		if _, err := os.Stat(filepath.Join(hostDir, "prestop-ran")); err != nil {
			t.Fatalf("preStop hook did not run: %v", err)
		}
	})
}
