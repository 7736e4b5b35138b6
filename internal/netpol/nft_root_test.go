package netpol

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// testNet is a node and its pods in network namespaces of the test's
// own: the node's namespace holds a bridge (10.252.0.1/24) and one veth
// per pod; each pod's namespace the other end, with an address of the
// range. No traffic leaves these namespaces.
type testNet struct {
	t      *testing.T
	prefix string
	node   string
}

const testRange = "10.252.0"

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func newTestNet(t *testing.T) *testNet {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, nftables)")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	n := &testNet{t: t, prefix: fmt.Sprintf("pknp%d", os.Getpid())}
	n.node = n.prefix + "-node"
	t.Cleanup(func() {
		out, _ := exec.Command("ip", "netns", "list").Output()
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], n.prefix+"-") {
				exec.Command("ip", "netns", "del", f[0]).Run()
			}
		}
	})
	run(t, "ip", "netns", "add", n.node)
	run(t, "ip", "-n", n.node, "link", "set", "lo", "up")
	run(t, "ip", "-n", n.node, "link", "add", "br0", "type", "bridge")
	run(t, "ip", "-n", n.node, "addr", "add", testRange+".1/24", "dev", "br0")
	run(t, "ip", "-n", n.node, "link", "set", "br0", "up")
	return n
}

// addPod makes pod namespace name with address testRange.host.
func (n *testNet) addPod(name string, host int) string {
	t := n.t
	ns := n.prefix + "-" + name
	veth := fmt.Sprintf("v%s", name)
	run(t, "ip", "netns", "add", ns)
	run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	run(t, "ip", "-n", n.node, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
	run(t, "ip", "-n", n.node, "link", "set", veth, "master", "br0", "up")
	ip := fmt.Sprintf("%s.%d", testRange, host)
	run(t, "ip", "-n", ns, "addr", "add", ip+"/24", "dev", "eth0")
	run(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	run(t, "ip", "-n", ns, "route", "add", "default", "via", testRange+".1")
	return ip
}

// inNetns runs fn on an OS thread in network namespace ns; sockets fn
// makes stay there.
func inNetns(ns string, fn func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	err = fn()
	if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
		runtime.UnlockOSThread() // else the thread dies with the goroutine
	}
	return err
}

// echo listens on addr in pod namespace ns and echoes every line.
func (n *testNet) echo(ns, addr string) {
	var l net.Listener
	if err := inNetns(n.prefix+"-"+ns, func() (err error) { l, err = net.Listen("tcp", addr); return err }); err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
}

// dial connects from pod namespace ns to addr, or fails within 300ms.
func (n *testNet) dial(ns, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetns(n.prefix+"-"+ns, func() (err error) { c, err = net.DialTimeout("tcp", addr, 300*time.Millisecond); return err })
	return c, err
}

// expect waits (at most 2s) until a connection from ns to addr succeeds
// (or fails, when ok is false), and says how long it took.
func (n *testNet) expect(ns, addr string, ok bool) {
	n.t.Helper()
	start := time.Now()
	for {
		c, err := n.dial(ns, addr)
		if err == nil {
			c.Close()
		}
		if (err == nil) == ok {
			n.t.Logf("%s → %s: connects=%v after %v", ns, addr, ok, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > 2*time.Second {
			n.t.Fatalf("%s → %s: connects=%v, want %v (last error %v)", ns, addr, err == nil, ok, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func roundTrip(c net.Conn, wait time.Duration) error {
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && line != "ping\n" {
		err = fmt.Errorf("echoed %q", line)
	}
	return err
}

// startDriver runs a Netpol over cs in the node's namespace until the
// test ends; afterSync, if set, hears of its syncs.
func (n *testNet) startDriver(cs *fake.Clientset, afterSync func([]string)) *Netpol {
	t := n.t
	factory := informers.NewSharedInformerFactory(cs, 0)
	np, err := New(factory, Options{NodeName: "node1", Table: "plainkube-netpol-test"})
	if err != nil {
		t.Fatal(err)
	}
	np.afterSync = afterSync
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		factory.Shutdown() // after the cancel: it waits for the informers to stop
	})
	go func() {
		// The driver's goroutine stays on a thread in the node's
		// namespace: nft, conntrack and the sysctls act there. The thread
		// is never unlocked, so it ends with the goroutine.
		runtime.LockOSThread()
		f, err := os.Open("/var/run/netns/" + n.node)
		if err == nil {
			err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
			f.Close()
		}
		if err != nil {
			done <- err
			return
		}
		done <- np.Run(ctx)
	}()
	return np
}

// TestEnforcedInNetworkNamespaces runs the driver with real nftables in a
// node's network namespace against pods on its bridge, and checks real
// TCP connections.
func TestEnforcedInNetworkNamespaces(t *testing.T) {
	n := newTestNet(t)
	ips := map[string]string{"server": n.addPod("server", 2), "client": n.addPod("client", 3), "other": n.addPod("other", 4)}
	n.echo("server", ips["server"]+":8080")
	n.echo("server", ips["server"]+":9090")
	n.echo("other", ips["other"]+":8080")

	pod := func(name string, lbl map[string]string, ports ...corev1.ContainerPort) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: name, Labels: lbl},
			Spec:   corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "c", Ports: ports}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ips[name], PodIPs: []corev1.PodIP{{IP: ips[name]}}}}
	}
	cs := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"kubernetes.io/metadata.name": "x"}}},
		pod("server", map[string]string{"app": "server"}, corev1.ContainerPort{Name: "metrics", ContainerPort: 9090}),
		pod("client", map[string]string{"app": "client"}),
		pod("other", map[string]string{"app": "other"}),
	)
	ctx := t.Context()
	n.startDriver(cs, nil)

	server, server9090, other := ips["server"]+":8080", ips["server"]+":9090", ips["other"]+":8080"
	create := func(p *networkingv1.NetworkPolicy) {
		t.Helper()
		if _, err := cs.NetworkingV1().NetworkPolicies("x").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n.expect("client", server, true)
	n.expect("other", server, true)
	// A Service's DNAT, as the service proxy's (prerouting, dstnat), in
	// the node's namespace: 10.96.0.10:80 → the server's 8080.
	service := "10.96.0.10:80"
	svcRules := "table ip svc { chain pre { type nat hook prerouting priority dstnat; ip daddr 10.96.0.10 tcp dport 80 dnat to " + server + "; }; }"
	cmd := exec.Command("ip", "netns", "exec", n.node, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(svcRules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
	n.expect("other", service, true)
	probe, err := n.dial("node", server)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()

	t.Log("default-deny ingress in x blocks every pod's ingress, not the node's own connections")
	create(policy("x", "default-deny", all, ingressOnly, nil, nil))
	n.expect("client", server, false)
	n.expect("other", server, false)
	n.expect("client", other, false)
	n.expect("other", service, false)
	n.expect("node", server, true)
	if err := roundTrip(probe, time.Second); err != nil {
		t.Fatalf("the node's established connection to a pod after default-deny: %v", err)
	}

	t.Log("allow app=client on 8080 admits exactly that client and port")
	create(policy("x", "allow-client", map[string]string{"app": "server"}, nil,
		[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{podPeer(map[string]string{"app": "client"})},
			Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromInt32(8080))}}}, nil))
	n.expect("client", server, true)
	n.expect("other", server, false)
	n.expect("client", server9090, false)
	n.expect("client", service, true) // judged after the DNAT, by the endpoint
	n.expect("other", service, false)

	t.Log("a pod relabelled into a peer selector is admitted, and out of it no longer (element changes only)")
	relabel := func(app string) {
		t.Helper()
		p, err := cs.CoreV1().Pods("x").Get(ctx, "other", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Labels["app"] = app
		if _, err := cs.CoreV1().Pods("x").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	relabel("client")
	n.expect("other", server, true)
	relabel("other")
	n.expect("other", server, false)

	t.Log("a named port resolves to the server's container port")
	create(policy("x", "allow-metrics", map[string]string{"app": "server"}, nil,
		[]networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromString("metrics"))}}}, nil))
	n.expect("other", server9090, true)
	n.expect("other", server, false)

	t.Log("egress ipBlock with except stops the excepted destination and cuts its established connection")
	conn, err := n.dial("client", server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := roundTrip(conn, time.Second); err != nil {
		t.Fatalf("the established connection before the policy: %v", err)
	}
	create(policy("x", "client-egress", map[string]string{"app": "client"}, egressOnly, nil,
		[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{blockPeer(testRange+".0/24", ips["server"]+"/32")}}}))
	// other's ingress is default-deny: admit the client there to see the
	// egress allow.
	create(policy("x", "other-from-client", map[string]string{"app": "other"}, nil,
		[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{podPeer(map[string]string{"app": "client"})}}}, nil))
	n.expect("client", server, false)
	n.expect("client", other, true)
	start := time.Now()
	for {
		err := roundTrip(conn, 300*time.Millisecond)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatalf("the established connection: %v", err)
		}
		if time.Since(start) > 2*time.Second {
			t.Fatal("the established connection still carries traffic 2s after a policy forbade it")
		}
	}
	t.Logf("the established connection was cut within %v", time.Since(start).Round(time.Millisecond))
	conn.SetReadDeadline(time.Now().Add(time.Second))
	if b, err := io.ReadAll(conn); err == nil || len(b) > 0 {
		t.Fatalf("the cut connection delivered %q (err %v)", b, err)
	}

	t.Log("removing the policies restores traffic")
	for _, name := range []string{"default-deny", "allow-client", "allow-metrics", "client-egress", "other-from-client"} {
		if err := cs.NetworkingV1().NetworkPolicies("x").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n.expect("client", server, true)
	n.expect("other", server, true)
	n.expect("other", server9090, true)
}
