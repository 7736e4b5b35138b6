package network

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/pkg/testenv"
)

// The hosts of the test, all in network namespaces it makes and removes:
// a switch (a bridge) joining the nodes' links on 10.251.0.0/24, and per
// node a pod (a namespace behind a veth, the node its gateway) in the
// node's pod range of the test's cluster range 10.252.0.0/16. No link or
// address is added to the test machine's own namespace, and traffic goes
// only between these namespaces.
var (
	testClusterCIDR = netip.MustParsePrefix("10.252.0.0/16")
	testNodes       = []struct{ name, ip, podCIDR, podIP string }{
		{"node-a", "10.251.0.10", "10.252.0.0/24", "10.252.0.5"},
		{"node-b", "10.251.0.11", "10.252.1.0/24", "10.252.1.5"},
		{"node-c", "10.251.0.12", "10.252.2.0/24", "10.252.2.5"},
	}
)

func TestPodNetworkBetweenNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	env := testenv.Start(t)
	for _, backend := range []Backend{HostGW, VXLAN} {
		t.Run(string(backend), func(t *testing.T) { testBackend(t, env, backend) })
	}
}

func testBackend(t *testing.T, env *testenv.Env, backend Backend) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(env.Config)
	prefix := fmt.Sprintf("pkn%d%s", os.Getpid()%100000, backend[:1])
	sw := prefix + "-sw"
	hosts := newTopology(t, prefix, sw)

	for _, n := range testNodes {
		createNode(t, ctx, admin, n.name, n.ip, n.podCIDR)
	}
	// A fourth node off the nodes' subnet: host-gw cannot route to it (and
	// says so); nothing is ever sent there.
	createNode(t, ctx, admin, "node-far", "10.251.9.9", "10.252.9.0/24")

	// One pod network per node, in its namespace, as that node.
	var wg sync.WaitGroup
	runCtx, stop := context.WithCancel(ctx)
	t.Cleanup(func() { stop(); wg.Wait() })
	for i, n := range testNodes {
		cs := kubernetes.NewForConfigOrDie(asNode(env.Config, n.name))
		factory := informers.NewSharedInformerFactory(cs, 0)
		pn, err := New(cs, factory, Options{NodeName: n.name, NodeIP: netip.MustParseAddr(n.ip), Backend: backend,
			ClusterCIDRs: []netip.Prefix{testClusterCIDR}, ResyncPeriod: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		factory.Start(runCtx.Done())
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := inNetns(hosts[i].node, func() error { return pn.Run(runCtx) })
			if err != nil {
				t.Errorf("%s: %v", n.name, err)
			}
		}()
	}

	// Every pod reaches every other node's pod, keeping its address.
	for i, from := range testNodes {
		for j, to := range testNodes {
			if i == j {
				continue
			}
			waitFor(t, fmt.Sprintf("%s's pod to reach %s's pod", from.name, to.name), func() error {
				return connect(hosts[i].pod, hosts[j].pod, to.podIP, from.podIP)
			})
		}
	}
	// Out of the cluster's ranges (another node's own address), the pod's
	// traffic is masqueraded to its node's address.
	waitFor(t, "node-a's pod to reach node-b's address, masqueraded", func() error {
		return connect(hosts[0].pod, hosts[1].node, testNodes[1].ip, testNodes[0].ip)
	})

	routes := ipOut(t, "-n", hosts[0].node, "route", "show", "proto", fmt.Sprint(RouteProtocol))
	t.Logf("node-a's routes:\n%s", routes)
	if backend == VXLAN {
		for _, n := range testNodes[1:] {
			node, err := admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if node.Annotations[AnnotationVXLANIP] != strings.TrimSuffix(n.podCIDR, "/24") || node.Annotations[AnnotationVXLANMAC] == "" {
				t.Errorf("%s's VXLAN endpoint: %v", n.name, node.Annotations)
			}
			if !strings.Contains(routes, n.podCIDR+" via "+strings.TrimSuffix(n.podCIDR, "/24")+" dev "+VXLANDevice) {
				t.Errorf("no route to %s through %s", n.podCIDR, VXLANDevice)
			}
		}
		if mtu := inNetnsValue(t, hosts[0].node, func() (int, error) { return PodMTU(VXLAN, netip.MustParseAddr(testNodes[0].ip)) }); mtu != 1450 {
			t.Errorf("pod MTU = %d, want 1450", mtu)
		}
	} else {
		for _, n := range testNodes[1:] {
			if !strings.Contains(routes, n.podCIDR+" via "+n.ip) {
				t.Errorf("no route to %s via %s", n.podCIDR, n.ip)
			}
		}
		waitFor(t, "node-a's condition to name node-far", func() error {
			node, err := admin.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionFalse && c.Reason == ReasonRoutesMissing &&
					strings.Contains(c.Message, "node-far (its InternalIP 10.251.9.9 is not on a directly connected subnet") {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", node.Status.Conditions)
		})
	}
	if strings.Contains(routes, "10.252.9.0") {
		t.Errorf("a route to node-far's pods: %s", routes)
	}
	if out := ipOut(t, "netns", "exec", hosts[0].node, "nft", "list", "table", "ip", DefaultTable); !strings.Contains(out, "masquerade") {
		t.Errorf("node-a's table:\n%s", out)
	}

	// A Node deleted: its routes (and VXLAN entries) go from the others.
	if err := admin.CoreV1().Nodes().Delete(ctx, "node-c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node-c's route to go from node-a", func() error {
		out := ipOut(t, "-n", hosts[0].node, "route", "show", "proto", fmt.Sprint(RouteProtocol))
		if strings.Contains(out, "10.252.2.0/24") {
			return fmt.Errorf("routes:\n%s", out)
		}
		if !strings.Contains(out, "10.252.1.0/24") {
			return fmt.Errorf("node-b's route went too:\n%s", out)
		}
		if backend == VXLAN {
			if neigh := ipOut(t, "-n", hosts[0].node, "neigh", "show", "dev", VXLANDevice); strings.Contains(neigh, "10.252.2.0") {
				return fmt.Errorf("neighbours:\n%s", neigh)
			}
			if fdb := cmdOut(t, "bridge", "-n", hosts[0].node, "fdb", "show", "dev", VXLANDevice); strings.Contains(fdb, "10.251.0.12") {
				return fmt.Errorf("forwarding entries:\n%s", fdb)
			}
		}
		return nil
	})
	if err := connect(hosts[0].pod, hosts[1].pod, testNodes[1].podIP, testNodes[0].podIP); err != nil {
		t.Errorf("node-a's pod to node-b's after node-c left: %v", err)
	}

	stop()
	wg.Wait()
	// Cleanup, in node-a's namespace, leaves none of it.
	var removed []string
	if err := inNetns(hosts[0].node, func() error {
		return Cleanup(context.Background(), DefaultTable, func(s string) { removed = append(removed, s) })
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("cleanup: %v", removed)
	if out := ipOut(t, "-n", hosts[0].node, "route", "show", "proto", fmt.Sprint(RouteProtocol)); out != "" {
		t.Errorf("routes after cleanup:\n%s", out)
	}
	if out := ipOut(t, "-n", hosts[0].node, "link", "show"); strings.Contains(out, VXLANDevice) {
		t.Errorf("links after cleanup:\n%s", out)
	}
	if out := ipOut(t, "netns", "exec", hosts[0].node, "nft", "list", "tables"); strings.Contains(out, DefaultTable) {
		t.Errorf("tables after cleanup:\n%s", out)
	}
}

// host is a node's namespace and its pod's.
type host struct{ node, pod string }

// newTopology makes the switch and, per test node, the node's and its
// pod's namespaces, linked; t.Cleanup removes them all (deleting a
// namespace deletes its links).
func newTopology(t *testing.T, prefix, sw string) []host {
	t.Helper()
	var made []string
	t.Cleanup(func() {
		for _, ns := range made {
			if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
				t.Logf("deleting namespace %s: %v: %s", ns, err, out)
			}
		}
	})
	addNS := func(name string) {
		ip(t, "netns", "add", name)
		made = append(made, name)
		ip(t, "-n", name, "link", "set", "lo", "up")
	}
	addNS(sw)
	ip(t, "-n", sw, "link", "add", "br0", "type", "bridge")
	ip(t, "-n", sw, "link", "set", "br0", "up")
	var hosts []host
	for i, n := range testNodes {
		h := host{node: fmt.Sprintf("%s-n%d", prefix, i), pod: fmt.Sprintf("%s-p%d", prefix, i)}
		addNS(h.node)
		addNS(h.pod)
		port := fmt.Sprintf("port%d", i)
		ip(t, "-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", h.node)
		ip(t, "-n", sw, "link", "set", port, "master", "br0", "up")
		ip(t, "-n", h.node, "addr", "add", n.ip+"/24", "dev", "eth0")
		ip(t, "-n", h.node, "link", "set", "eth0", "up")
		gw := netip.MustParsePrefix(n.podCIDR).Addr().Next()
		ip(t, "-n", h.node, "link", "add", "pod0", "type", "veth", "peer", "name", "eth0", "netns", h.pod)
		ip(t, "-n", h.node, "addr", "add", gw.String()+"/24", "dev", "pod0")
		ip(t, "-n", h.node, "link", "set", "pod0", "up")
		ip(t, "-n", h.pod, "addr", "add", n.podIP+"/24", "dev", "eth0")
		ip(t, "-n", h.pod, "link", "set", "eth0", "up")
		ip(t, "-n", h.pod, "route", "add", "default", "via", gw.String())
		hosts = append(hosts, h)
	}
	return hosts
}

func createNode(t *testing.T, ctx context.Context, cs kubernetes.Interface, name, ip, podCIDR string) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// asNode is cfg impersonating the node's identity, so that what the
// pod network may do is what a node may.
func asNode(cfg *rest.Config, name string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}}
	return c
}

// inNetns runs f on a thread of its own in the named namespace (sockets f
// opens and processes it starts are there). The thread is not reused.
func inNetns(name string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		ns, err := netns.GetFromName(name)
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

func inNetnsValue[T any](t *testing.T, name string, f func() (T, error)) T {
	var v T
	if err := inNetns(name, func() (err error) { v, err = f(); return err }); err != nil {
		t.Fatal(err)
	}
	return v
}

// connect opens a TCP listener at addr in namespace to, connects to it
// from namespace from and checks that the connection came from wantSrc.
func connect(from, to, addr, wantSrc string) error {
	var l net.Listener
	if err := inNetns(to, func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort(addr, "0"))
		return err
	}); err != nil {
		return err
	}
	defer l.Close()
	accepted := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			accepted <- "accept: " + err.Error()
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "hello")
		accepted <- c.RemoteAddr().(*net.TCPAddr).IP.String()
	}()
	err := inNetns(from, func() error {
		c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		b, err := io.ReadAll(c)
		if err != nil || string(b) != "hello" {
			return fmt.Errorf("read %q: %v", b, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if src := <-accepted; src != wantSrc {
		return fmt.Errorf("the connection came from %s, want %s", src, wantSrc)
	}
	return nil
}

// waitFor retries f for up to 20 seconds.
func waitFor(t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = f(); err == nil {
			return
		}
	}
	t.Fatalf("waiting for %s: %v", what, err)
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func ipOut(t *testing.T, args ...string) string { t.Helper(); return cmdOut(t, "ip", args...) }

func cmdOut(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
