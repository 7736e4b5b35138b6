package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/devcluster"
	"plainkube.dev/plainkube/internal/image"
	"plainkube.dev/plainkube/internal/mounts"
)

// TestDevCluster brings up a cluster of three hosts (network namespaces)
// on this machine with the devcluster harness that 'plainkube dev cluster'
// runs: the server and two agents joined with a token are Ready; an image
// loaded into every host runs in a pod the scheduler puts on an agent, and
// the API server reads its log from that agent's namespace; the agent's
// processes killed with SIGKILL make its node NotReady and a Deployment's
// pod there is recreated on the other nodes (node lifecycle's taint
// eviction, with the pods' one-second tolerations); 'plainkube dev
// cluster down' leaves no namespace, link, nftables table, mount or
// process; the same directory comes up again and goes down again from its
// names alone (no state file: a run that crashed). Root only.
func TestDevCluster(t *testing.T) {
	requireDevCluster(t)
	dir := t.TempDir()
	id, _ := devcluster.ClusterID(dir)
	netnsBefore := netnsNames()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dc, c := upDevCluster(t, ctx, devcluster.Options{Dir: dir, Agents: 2,
		// Node lifecycle acts within seconds of missed heartbeats (10 s apart).
		ServerArgs: []string{"--node-monitor-grace-period", "15s"}})

	nodes := c.must("get", "nodes", "-o", "custom-columns=NAME:.metadata.name,READY:.status.conditions[?(@.type=='Ready')].status,IP:.status.addresses[?(@.type=='InternalIP')].address,CIDR:.spec.podCIDR", "--no-headers")
	t.Logf("nodes:\n%s", nodes)
	lines := strings.Split(strings.TrimSpace(nodes), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d nodes, want 3", len(lines))
	}
	podCIDR := map[string]string{}
	for i, want := range []string{"agent1", "agent2", "server0"} {
		f := strings.Fields(lines[i])
		if len(f) != 4 || f[0] != want || f[1] != "True" {
			t.Fatalf("node line %q, want %s Ready", lines[i], want)
		}
		if ip, err := netip.ParseAddr(f[2]); err != nil || !dc.Subnet.Contains(ip) {
			t.Fatalf("node %s address %s outside the hosts' network %s", f[0], f[2], dc.Subnet)
		}
		podCIDR[f[0]] = f[3]
	}
	// The machine's fence: nothing forwarded off the bridge.
	fence, err := exec.Command("nft", "list", "table", "inet", dc.Table).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list table inet %s: %v %s", dc.Table, err, fence)
	}
	contains(t, string(fence), `iifname "`+dc.Bridge+`" oifname != "`+dc.Bridge+`" drop`, `oifname "`+dc.Bridge+`" iifname != "`+dc.Bridge+`" drop`)

	// An image built once, loaded into every host's containerd.
	img, err := image.FromBinary("/bin/busybox", "/bin/busybox", "/bin/sh", "/bin/sleep", "/bin/echo")
	if err != nil {
		t.Fatal(err)
	}
	tar := filepath.Join(t.TempDir(), "busybox.tar")
	if err := image.Save(img, "busybox:e2e", tar); err != nil {
		t.Fatal(err)
	}
	if err := dc.LoadImage(ctx, tar); err != nil {
		t.Fatal(err)
	}
	c.must("apply", "-f", writeFile(t, t.TempDir(), "pod.yaml", `apiVersion: v1
kind: Pod
metadata: {name: on-agent2}
spec:
  nodeSelector: {kubernetes.io/hostname: agent2}
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:e2e
    imagePullPolicy: Never
    command: ["sh", "-c", "echo hello-from-agent2; exec sleep 3599"]
`))
	c.eventually([]string{"Running"}, "get", "pod", "on-agent2")
	ip := c.must("get", "pod", "on-agent2", "-o", "jsonpath={.status.podIP}")
	if a, err := netip.ParseAddr(ip); err != nil || !netip.MustParsePrefix(podCIDR["agent2"]).Contains(a) {
		t.Fatalf("pod IP %q outside agent2's pod range %s", ip, podCIDR["agent2"])
	}
	c.eventually([]string{"hello-from-agent2"}, "logs", "on-agent2")

	// A Deployment with a pod on every node; NotReady nodes are left out of
	// the spread (nodeTaintsPolicy: Honor), so the replacement fits.
	c.must("apply", "-f", writeFile(t, t.TempDir(), "spread.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: spread}
spec:
  replicas: 3
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      terminationGracePeriodSeconds: 1
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Honor, labelSelector: {matchLabels: {app: spread}}}
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 1}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 1}
      containers:
      - {name: c, image: busybox:e2e, imagePullPolicy: Never, command: ["sleep", "3599"]}
`))
	c.eventually([]string{"3/3"}, "get", "deployment", "spread")
	spread := func() map[string]int {
		out := c.must("get", "pods", "-l", "app=spread", "-o", `jsonpath={range .items[?(@.status.phase=="Running")]}{.spec.nodeName} {.metadata.deletionTimestamp}{"\n"}{end}`)
		perNode := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 1 { // not terminating
				perNode[f[0]]++
			}
		}
		return perNode
	}
	if perNode := spread(); len(perNode) != 3 {
		t.Fatalf("the Deployment's running pods by node: %v, want one on each of 3", perNode)
	}

	// kill -9 of agent1's processes: its node goes NotReady.
	killed := time.Now()
	if err := dc.Crash("agent1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "agent1 NotReady", func() (bool, string) {
		out, _ := c.run("get", "node", "agent1", "--no-headers")
		return strings.Contains(out, "NotReady"), out
	})
	t.Logf("agent1 NotReady %s after its processes were killed", time.Since(killed).Round(time.Second))
	waitFor(t, 60*time.Second, "the pod on agent1 recreated on the other nodes", func() (bool, string) {
		perNode := spread()
		return perNode["agent1"] == 0 && perNode["server0"]+perNode["agent2"] == 3, fmt.Sprint(perNode)
	})
	t.Logf("3 pods running on server0 and agent2 %s after agent1's processes were killed", time.Since(killed).Round(time.Second))

	// down, as the command (from the state file), then nothing is left.
	if out, err := exec.Command(binary, "dev", "cluster", "down", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("dev cluster down: %v\n%s", err, out)
	}
	requireNothingLeft(t, dir, id, netnsBefore, "sleep 3599")
	if err := devcluster.Down(dir); err != nil {
		t.Fatalf("a second down: %v", err)
	}
	for _, log := range []string{"s0.log", "a1.log", "a2.log"} {
		if _, err := os.Stat(filepath.Join(dir, log)); err != nil {
			t.Errorf("the host's log is gone: %v", err)
		}
	}

	// The same directory again; then down from the names alone.
	dc, err = devcluster.Up(ctx, devcluster.Options{Dir: dir, Binary: binary, ReadyTimeout: 90 * time.Second})
	if err != nil {
		t.Fatalf("up again in the same directory: %v", err)
	}
	t.Logf("1 host up again after %s", dc.Took.Round(time.Millisecond))
	if err := os.Remove(filepath.Join(dir, "devcluster.json")); err != nil {
		t.Fatal(err)
	}
	if err := dc.Down(); err != nil {
		t.Fatalf("down without a state file: %v", err)
	}
	requireNothingLeft(t, dir, id, netnsBefore, "")
}

// netnsNames are the named network namespaces.
func netnsNames() map[string]bool {
	names := map[string]bool{}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}

// requireNothingLeft checks with ip, nft and ps that nothing of the
// cluster in dir (id its ClusterID) is left, and that no network namespace
// was added since before.
func requireNothingLeft(t *testing.T, dir, id string, netnsBefore map[string]bool, command string) {
	t.Helper()
	for _, cmd := range [][]string{{"ip", "netns"}, {"ip", "link"}, {"nft", "list", "tables"}} {
		out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v %s", strings.Join(cmd, " "), err, out)
		}
		if strings.Contains(string(out), "pk-"+id) {
			t.Errorf("after down, %s shows the cluster's pk-%s:\n%s", strings.Join(cmd, " "), id, out)
		}
	}
	for n := range netnsNames() {
		if !netnsBefore[n] {
			t.Errorf("after down, the network namespace %s is left", n)
		}
	}
	ps, err := exec.Command("ps", "-eo", "pid,stat,args").CombinedOutput()
	if err != nil {
		t.Fatalf("ps: %v %s", err, ps)
	}
	for _, line := range strings.Split(string(ps), "\n") {
		if strings.Contains(line, dir) || (command != "" && strings.Contains(line, command)) {
			t.Errorf("after down, a process of the cluster is left: %s", line)
		}
	}
	if left, _ := mounts.Under(dir); len(left) > 0 {
		t.Errorf("after down, mounted under %s: %v", dir, left)
	}
	for _, gone := range []string{"s0", "a1", "admin.kubeconfig", "devcluster.json"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("after down, %s is left in %s", gone, dir)
		}
	}
}

// requireDevCluster skips unless this host can run a dev cluster: the node
// agent's needs, ip and nft.
func requireDevCluster(t *testing.T) {
	t.Helper()
	requireRealNode(t)
	for _, bin := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipping: %s is not installed", bin)
		}
	}
}

// upDevCluster brings up a dev cluster with this test's binary (in
// o.Dir, or a fresh directory), taken down when the test ends, with the
// image archives loaded into every host; c runs kubectl against it.
func upDevCluster(t *testing.T, ctx context.Context, o devcluster.Options, imageTars ...string) (dc *devcluster.Cluster, c *cluster) {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	o.Binary, o.ReadyTimeout = binary, 90*time.Second
	dc, err := devcluster.Up(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dc.Down(); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	t.Logf("%d hosts up, every node Ready, after %s", 1+o.Agents, dc.Took.Round(time.Millisecond))
	for _, tar := range imageTars {
		if err := dc.LoadImage(ctx, tar); err != nil {
			t.Fatal(err)
		}
	}
	return dc, &cluster{t: t, dataDir: o.Dir, kubectl: kubectlPath(t)} // kubectl with Dir/admin.kubeconfig
}

// nettoolImageTar is the nettool image (test/e2e/nettool) as an archive
// to load into a dev cluster's hosts.
func nettoolImageTar(t *testing.T) string {
	t.Helper()
	img, err := image.FromBinary(nettool, "/bin/nettool")
	if err != nil {
		t.Fatal(err)
	}
	tar := filepath.Join(t.TempDir(), "nettool.tar")
	if err := image.Save(img, "nettool:e2e", tar); err != nil {
		t.Fatal(err)
	}
	return tar
}
