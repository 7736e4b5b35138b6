package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/devcluster"
	"plainkube.dev/plainkube/internal/image/pause"
)

// runPodNet measures the pod network of a dev cluster (a server and two
// agents as network namespaces of this machine; root): TCP round-trip
// latency and one connection's throughput from a pod to a pod on the
// same node and to a pod on another node, for each pod network backend
// (--pod-network, default both). The pods are real pods of the cluster
// (the pause image); the bench's own goroutines send and answer from
// inside the pods' network namespaces, so the packets take the pods'
// path: veth, bridge, the node's routes, and for another node the hosts'
// link (host-gw) or VXLAN.
func runPodNet(ctx context.Context, o *Options, r *Result) error {
	self, err := devClusterBinary("podnet")
	if err != nil {
		return err
	}
	backends := []string{"host-gw", "vxlan"}
	if o.PodNetwork != "" {
		backends = []string{o.PodNetwork}
	}
	for _, backend := range backends {
		if err := podNetOnce(ctx, o, r, self, backend); err != nil {
			return fmt.Errorf("%s: %w", backend, err)
		}
	}
	return nil
}

func podNetOnce(ctx context.Context, o *Options, r *Result, self, backend string) error {
	dir, err := os.MkdirTemp("", "plainkube-bench-podnet-")
	if err != nil {
		return err
	}
	c, err := devcluster.Up(ctx, devcluster.Options{Dir: dir, Agents: 2, Binary: self, PodNetwork: backend})
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	defer func() {
		if c.Down() == nil {
			os.RemoveAll(dir)
		}
	}()
	o.progress("podnet: %s cluster up after %s", backend, c.Took.Round(time.Millisecond))
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// The server and one client on agent1, the other client on agent2.
	where := map[string]string{"podnet-server": "agent1", "podnet-near": "agent1", "podnet-far": "agent2"}
	ips := map[string]netip.Addr{}
	for name, node := range where {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: new(int64),
				Containers: []corev1.Container{{Name: "pause", Image: pause.Ref, ImagePullPolicy: corev1.PullNever}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(time.Minute)
	for name := range where {
		for {
			p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				ips[name], err = netip.ParseAddr(p.Status.PodIP)
				if err != nil {
					return err
				}
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("pod %s not Running with an address within a minute", name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	netns := map[string]string{}
	for name, ip := range ips {
		if netns[name], err = c.PodNetns(ip); err != nil {
			return err
		}
	}
	srv, err := listenIn(netns["podnet-server"], netip.AddrPortFrom(ips["podnet-server"], 7000))
	if err != nil {
		return err
	}
	defer srv.close()
	prefix := strings.ReplaceAll(backend, "-", "") + "_"
	results := map[string][2]float64{}
	for _, peer := range []struct{ name, label string }{{"podnet-near", "same_node"}, {"podnet-far", "other_node"}} {
		lat, err := roundTrips(netns[peer.name], srv.addr, 2000)
		if err != nil {
			return fmt.Errorf("%s: %w", peer.label, err)
		}
		mbps, err := throughput(netns[peer.name], srv, 3*time.Second)
		if err != nil {
			return fmt.Errorf("%s: %w", peer.label, err)
		}
		r.add(prefix+peer.label+"_rtt_p50", lat.percentile(0.5)*1000, "µs")
		r.add(prefix+peer.label+"_rtt_p99", lat.percentile(0.99)*1000, "µs")
		r.add(prefix+peer.label+"_throughput", mbps, "MiB/s")
		results[peer.label] = [2]float64{lat.percentile(0.5), mbps}
	}
	if near := results["same_node"]; near[1] > 0 && near[0] > 0 {
		far := results["other_node"]
		r.add(prefix+"other_over_same_rtt_p50", far[0]/near[0], "ratio")
		r.add(prefix+"other_over_same_throughput", far[1]/near[1], "ratio")
	}
	return nil
}

// podServer answers in a pod's network namespace: the first byte of a
// connection says echo ('e': each 64-byte message back) or sink ('s':
// read and count everything).
type podServer struct {
	ln   net.Listener
	addr netip.AddrPort
	sunk atomic.Int64
}

func listenIn(netns string, addr netip.AddrPort) (*podServer, error) {
	s := &podServer{addr: addr}
	err := devcluster.InNetns(netns, func() (err error) {
		s.ln, err = net.Listen("tcp", addr.String())
		return err
	})
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			conn, err := s.ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	return s, nil
}

func (s *podServer) serve(conn net.Conn) {
	defer conn.Close()
	kind := make([]byte, 1)
	if _, err := io.ReadFull(conn, kind); err != nil {
		return
	}
	if kind[0] == 's' {
		n, _ := io.Copy(io.Discard, conn)
		s.sunk.Add(n)
		return
	}
	buf := make([]byte, 64)
	for {
		if _, err := io.ReadFull(conn, buf); err != nil {
			return
		}
		if _, err := conn.Write(buf); err != nil {
			return
		}
	}
}

func (s *podServer) close() { s.ln.Close() }

// dialFrom connects from inside a pod's network namespace.
func dialFrom(netns string, to netip.AddrPort) (net.Conn, error) {
	var conn net.Conn
	err := devcluster.InNetns(netns, func() (err error) {
		conn, err = net.DialTimeout("tcp", to.String(), 5*time.Second)
		return err
	})
	return conn, err
}

// roundTrips sends n 64-byte messages one after the other on one
// connection and times each echo.
func roundTrips(netns string, to netip.AddrPort, n int) (latencies, error) {
	conn, err := dialFrom(netns, to)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := conn.Write([]byte{'e'}); err != nil {
		return nil, err
	}
	msg, back := make([]byte, 64), make([]byte, 64)
	var lat latencies
	for i := 0; i < n+100; i++ {
		start := time.Now()
		if _, err := conn.Write(msg); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(conn, back); err != nil {
			return nil, err
		}
		if i >= 100 { // the first ones warm up
			lat = append(lat, time.Since(start))
		}
	}
	return lat, nil
}

// throughput sends as fast as one connection goes for d and returns what
// the server received per second, in MiB.
func throughput(netns string, s *podServer, d time.Duration) (float64, error) {
	conn, err := dialFrom(netns, s.addr)
	if err != nil {
		return 0, err
	}
	before := s.sunk.Load()
	if _, err := conn.Write([]byte{'s'}); err != nil {
		conn.Close()
		return 0, err
	}
	buf := make([]byte, 256<<10)
	start := time.Now()
	conn.SetWriteDeadline(start.Add(d))
	for time.Since(start) < d {
		if _, err := conn.Write(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			conn.Close()
			return 0, err
		}
	}
	conn.Close()
	took := time.Since(start)
	// The server counts a connection once it has read it to the end.
	for wait := time.Now().Add(5 * time.Second); s.sunk.Load() == before && time.Now().Before(wait); {
		time.Sleep(10 * time.Millisecond)
	}
	return float64(s.sunk.Load()-before) / (1 << 20) / took.Seconds(), nil
}
