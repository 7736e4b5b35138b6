package devcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/knftables"

	"plainkube.dev/plainkube/internal/pki"
)

// DefaultDNSUpstream is where the hosts' DNS answerers forward names
// outside the cluster unless told otherwise: port 9 on the loopback of
// each host's own namespace, where nothing listens, so such names fail at
// once and no query leaves the machine.
const DefaultDNSUpstream = "127.0.0.1:9"

// Options configure Up.
type Options struct {
	// Dir holds the cluster: its state file, admin.kubeconfig, each host's
	// data directory (s0, a1, …) and log (s0.log, a1.log, …). Required.
	Dir string
	// Servers must be 1 (the default): one server, in the first namespace.
	Servers int
	// Agents is how many agents join the server, each in a namespace of its own.
	Agents int
	// Binary is the plainkube the hosts run (default: this executable).
	Binary string
	// Subnet is the hosts' network, a /24 or larger of IPv4 (default: a
	// /24 of 10.250.0.0/16 chosen from Dir's hash and free on this host).
	Subnet netip.Prefix
	// DNSUpstream is the hosts' --dns-upstream (default DefaultDNSUpstream).
	DNSUpstream string
	// ClusterCIDR is the server's and the agents' --cluster-cidr (default
	// 10.42.0.0/16, inside the namespaces: the host never routes it).
	ClusterCIDR string
	// PodNetwork is every host's --pod-network (default: theirs, host-gw).
	PodNetwork string
	// ServerArgs and AgentArgs are more flags for the server and for every agent.
	ServerArgs, AgentArgs []string
	// ReadyTimeout bounds the wait for every node to be Ready (default 60s).
	ReadyTimeout time.Duration
	// Progress, when set, is told each step.
	Progress io.Writer
}

// Cluster is a cluster Up made (or Open found).
type Cluster struct {
	*Layout
	// Took is how long Up took, from its start to every node Ready.
	Took time.Duration

	mu     sync.Mutex
	exited map[string]chan struct{} // host name → closed when the process Up started has exited
}

// Open returns the cluster whose state file is in dir.
func Open(dir string) (*Cluster, error) {
	l, err := ReadState(dir)
	if err != nil {
		return nil, err
	}
	return &Cluster{Layout: l}, nil
}

// Up makes the cluster's network, starts the server and joins the agents,
// and returns once every node is Ready. If that fails it removes what it
// made (the hosts' logs stay) and says which host failed.
func Up(ctx context.Context, o Options) (*Cluster, error) {
	started := time.Now()
	if o.Servers == 0 {
		o.Servers = 1
	}
	if o.Servers != 1 {
		return nil, fmt.Errorf("devcluster: --servers %d: only 1 server is supported for now", o.Servers)
	}
	if o.Dir == "" {
		return nil, errors.New("devcluster: a directory (--dir) is required")
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("devcluster: making network namespaces needs root")
	}
	for _, bin := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("devcluster: %s is not installed (apt-get install -y iproute2 nftables)", bin)
		}
	}
	if o.Binary == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Binary = self
	}
	if o.DNSUpstream == "" {
		o.DNSUpstream = DefaultDNSUpstream
	}
	if o.ClusterCIDR == "" {
		o.ClusterCIDR = "10.42.0.0/16"
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 60 * time.Second
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	id, err := ClusterID(dir)
	if err != nil {
		return nil, err
	}
	if err := checkNothingLeft(dir, id); err != nil {
		return nil, err
	}
	subnet := o.Subnet
	if !subnet.IsValid() {
		if subnet, err = ChooseSubnet(id, hostPrefixes()); err != nil {
			return nil, err
		}
	} else if overlapsAny(subnet, hostPrefixes()) {
		return nil, fmt.Errorf("devcluster: subnet %s overlaps an address or route of this host", subnet)
	}
	l, err := NewLayout(dir, o.Agents, subnet, o.Binary)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The state first: whatever follows, Down finds it.
	if err := l.writeState(); err != nil {
		return nil, err
	}
	c := &Cluster{Layout: l, exited: map[string]chan struct{}{}}
	if err := c.up(ctx, o, started); err != nil {
		if derr := c.Down(); derr != nil {
			err = fmt.Errorf("%w (and removing the cluster: %v)", err, derr)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) progress(o Options, format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

func (c *Cluster) up(ctx context.Context, o Options, started time.Time) error {
	if err := c.fence(ctx); err != nil {
		return err
	}
	if err := c.makeNetwork(); err != nil {
		return err
	}
	c.progress(o, "network %s on bridge %s (%s): %d namespaces", c.Subnet, c.Bridge, c.Gateway, len(c.Hosts))
	s := c.Server()
	var common []string
	if o.PodNetwork != "" {
		common = []string{"--pod-network", o.PodNetwork}
	}
	args := []string{"server", "--data-dir", s.DataDir, "--node-name", s.NodeName, "--node-ip", s.Addr.String(),
		"--cluster-cidr", o.ClusterCIDR, "--dns-upstream", o.DNSUpstream}
	args = append(args, common...)
	if err := c.start(s, append(args, o.ServerArgs...)); err != nil {
		return err
	}
	token, caHash, err := c.waitServer(ctx, o.ReadyTimeout-time.Since(started))
	if err != nil {
		return err
	}
	c.progress(o, "server %s serving at %s after %s", s.NodeName, c.ServerURL(), time.Since(started).Round(time.Millisecond))
	for i := range c.Hosts[1:] {
		h := &c.Hosts[1+i]
		args := []string{"agent", "--server", c.ServerURL(), "--token", token, "--ca-cert-hash", caHash,
			"--data-dir", h.DataDir, "--node-name", h.NodeName, "--node-ip", h.Addr.String(), "--dns-upstream", o.DNSUpstream,
			"--cluster-cidr", o.ClusterCIDR}
		args = append(args, common...)
		if err := c.start(h, append(args, o.AgentArgs...)); err != nil {
			return err
		}
	}
	if err := c.waitReady(ctx, o.ReadyTimeout-time.Since(started)); err != nil {
		return err
	}
	c.Took = time.Since(started)
	return nil
}

// checkNothingLeft refuses a directory that holds a cluster, or the
// remains of one, so that Up never tears down what it did not make.
func checkNothingLeft(dir, id string) error {
	hint := "run: plainkube dev cluster down --dir " + dir
	if _, err := os.Stat(statePath(dir)); err == nil {
		return fmt.Errorf("devcluster: %s already holds a cluster; %s", dir, hint)
	}
	if left := namedNetns(func(n string) bool { return ownsName(id, n) }); len(left) > 0 {
		return fmt.Errorf("devcluster: the network namespaces %v of a cluster in %s are still there; %s", left, dir, hint)
	}
	if _, err := net.InterfaceByName(prefix(id)); err == nil {
		return fmt.Errorf("devcluster: the bridge %s of a cluster in %s is still there; %s", prefix(id), dir, hint)
	}
	return nil
}

// hostPrefixes are the networks of the host's addresses and routes.
func hostPrefixes() []netip.Prefix {
	var used []netip.Prefix
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if p, err := netip.ParsePrefix(n.String()); err == nil {
					used = append(used, p.Masked())
				}
			}
		}
	}
	if routes, err := netlink.RouteList(nil, netlink.FAMILY_V4); err == nil {
		for _, r := range routes {
			if r.Dst != nil {
				if p, err := netip.ParsePrefix(r.Dst.String()); err == nil {
					used = append(used, p)
				}
			}
		}
	}
	return used
}

// fence adds the host's nftables table that keeps the cluster's traffic
// between its namespaces and the host: nothing is forwarded from the
// bridge to another interface, nor from another into it.
func (c *Cluster) fence(ctx context.Context) error {
	nft, err := knftables.New(knftables.InetFamily, c.Table)
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	tx := nft.NewTransaction()
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("plainkube dev cluster in " + c.Dir)})
	tx.Add(&knftables.Chain{Name: "forward", Type: knftables.PtrTo(knftables.FilterType),
		Hook: knftables.PtrTo(knftables.ForwardHook), Priority: knftables.PtrTo(knftables.FilterPriority)})
	tx.Flush(&knftables.Chain{Name: "forward"})
	tx.Add(&knftables.Rule{Chain: "forward", Rule: knftables.Concat("iifname", c.Bridge, "oifname", "!=", c.Bridge, "drop")})
	tx.Add(&knftables.Rule{Chain: "forward", Rule: knftables.Concat("oifname", c.Bridge, "iifname", "!=", c.Bridge, "drop")})
	if err := nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("nftables table inet %s: %w", c.Table, err)
	}
	return nil
}

// makeNetwork makes the bridge and, for each host, its namespace joined
// to the bridge by a veth pair: eth0 with the host's address, lo up, the
// default route through the bridge's address, and forwarding on (the
// host's pods are routed through it).
func (c *Cluster) makeNetwork() error {
	bits := c.Subnet.Bits()
	lines := []string{
		"link add " + c.Bridge + " type bridge",
		fmt.Sprintf("addr add %s/%d dev %s", c.Gateway, bits, c.Bridge),
		"link set " + c.Bridge + " up",
	}
	for _, h := range c.Hosts {
		lines = append(lines,
			"netns add "+h.Netns,
			"link add "+h.Veth+" type veth peer name eth0 netns "+h.Netns,
			"link set "+h.Veth+" master "+c.Bridge,
			"link set "+h.Veth+" up")
	}
	if err := ipBatch("", lines); err != nil {
		return err
	}
	for _, h := range c.Hosts {
		if err := ipBatch(h.Netns, []string{
			fmt.Sprintf("addr add %s/%d dev eth0", h.Addr, bits),
			"link set lo up",
			"link set eth0 up",
			"route add default via " + c.Gateway.String(),
		}); err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
		if err := setSysctl(h.Netns, "net.ipv4.ip_forward", "1"); err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
	}
	return nil
}

// start runs the host's plainkube in its namespace, in a session of its
// own (it outlives Up's caller: Down stops it), its output in the host's
// log, and records its pid in the state file.
func (c *Cluster) start(h *Host, args []string) error {
	if err := os.MkdirAll(h.DataDir, 0o700); err != nil {
		return err
	}
	logf, err := os.OpenFile(h.Log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(c.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := startIn(h.Netns, cmd); err != nil {
		return fmt.Errorf("host %s: starting %s: %w", h.Name, c.Binary, err)
	}
	h.PID, h.Start = cmd.Process.Pid, startTime(cmd.Process.Pid)
	done := make(chan struct{})
	c.mu.Lock()
	c.exited[h.Name] = done
	c.mu.Unlock()
	go func() { cmd.Wait(); close(done) }()
	return c.writeState()
}

// hasExited says whether the process Up started for the host has ended.
func (c *Cluster) hasExited(h *Host) bool {
	c.mu.Lock()
	done := c.exited[h.Name]
	c.mu.Unlock()
	if done == nil {
		return h.PID != 0 && startTime(h.PID) != h.Start
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// failure says why a host did not come up, with the end of its log.
func (c *Cluster) failure(h *Host, what string) error {
	if c.hasExited(h) {
		what = "its plainkube exited"
	}
	return fmt.Errorf("devcluster: host %s (node %s, %s): %s; see its log %s%s", h.Name, h.NodeName, h.Netns, what, h.Log, logTail(h.Log, 8))
}

func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return ":\n  " + strings.Join(lines, "\n  ")
}

// waitServer waits for the server's API at its namespace's address, and
// returns the join token and the CA's pin; it writes the admin kubeconfig.
func (c *Cluster) waitServer(ctx context.Context, limit time.Duration) (token, caHash string, err error) {
	s := c.Server()
	deadline := time.Now().Add(limit)
	for {
		if token, caHash, err = c.serverReady(ctx); err == nil {
			return token, caHash, nil
		}
		if c.hasExited(s) || time.Now().After(deadline) || ctx.Err() != nil {
			return "", "", c.failure(s, fmt.Sprintf("the API server did not answer at %s (%v)", c.ServerURL(), err))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) serverReady(ctx context.Context) (token, caHash string, err error) {
	s := c.Server()
	if err := c.writeKubeconfig(); err != nil {
		return "", "", err
	}
	b, err := os.ReadFile(filepath.Join(s.DataDir, "join-token"))
	if err != nil {
		return "", "", err
	}
	caPEM, err := os.ReadFile(filepath.Join(s.DataDir, "pki", "ca.crt"))
	if err != nil {
		return "", "", err
	}
	ca, err := pki.ParseCertPEM(caPEM)
	if err != nil {
		return "", "", err
	}
	cs, err := c.Client()
	if err != nil {
		return "", "", err
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
	if err != nil {
		return "", "", err
	}
	if !bytes.Equal(bytes.TrimSpace(body), []byte("ok")) {
		return "", "", fmt.Errorf("/readyz: %s", body)
	}
	return strings.TrimSpace(string(b)), pki.CertHash(ca), nil
}

// writeKubeconfig writes the admin kubeconfig: the server's own, with
// the server's address in its namespace (reachable from the host).
func (c *Cluster) writeKubeconfig() error {
	cfg, err := clientcmd.LoadFromFile(filepath.Join(c.Server().DataDir, "admin.kubeconfig"))
	if err != nil {
		return err
	}
	for _, cl := range cfg.Clusters {
		cl.Server = c.ServerURL()
	}
	return clientcmd.WriteToFile(*cfg, c.Kubeconfig())
}

// Client is an admin client of the cluster.
func (c *Cluster) Client() (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	return kubernetes.NewForConfig(cfg)
}

// waitReady waits until every host's node is Ready.
func (c *Cluster) waitReady(ctx context.Context, limit time.Duration) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	for {
		ready := map[string]bool{}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		nodes, err := cs.CoreV1().Nodes().List(lctx, metav1.ListOptions{})
		cancel()
		if err == nil {
			for _, n := range nodes.Items {
				ready[n.Name] = nodeReady(&n)
			}
		}
		var waiting []*Host
		for i := range c.Hosts {
			if !ready[c.Hosts[i].NodeName] {
				waiting = append(waiting, &c.Hosts[i])
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		for _, h := range waiting {
			if c.hasExited(h) {
				return c.failure(h, "")
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			h := waiting[0]
			what := fmt.Sprintf("node %s not Ready within the wait", h.NodeName)
			if _, seen := ready[h.NodeName]; !seen {
				what = fmt.Sprintf("node %s never registered", h.NodeName)
			}
			return c.failure(h, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
