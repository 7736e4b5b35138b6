package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"plainkube.dev/plainkube/internal/api/nodeutil"

	mdns "github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Metric names of the service proxy (upstream kube-proxy's).
const (
	programmingMetric = "kubeproxy_network_programming_duration_seconds"
	syncMetric        = "kubeproxy_sync_proxy_rules_duration_seconds"
)

// proxiedNode is the first Ready node that is not simulated: the one
// whose proxy is measured.
func proxiedNode(ctx context.Context, cs kubernetes.Interface) (*corev1.Node, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "plainkube.dev/simulated!=true"})
	if err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		if nodeutil.IsReady(&nodes.Items[i]) {
			return &nodes.Items[i], nil
		}
	}
	return nil, errors.New("no Ready real node: the service workloads need a node running a service proxy")
}

// histogram is a Prometheus histogram's cumulative buckets and count.
type histogram struct {
	count   uint64
	buckets map[float64]uint64 // upper bound → cumulative count
}

// nodeHistograms scrapes the node's /metrics through the API server
// (nodes/<name>/proxy/metrics) and returns the named histograms.
func nodeHistograms(ctx context.Context, cs kubernetes.Interface, node string, names ...string) (map[string]histogram, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		return nil, err
	}
	out := map[string]histogram{}
	for _, name := range names {
		f, ok := families[name]
		if !ok || f.GetType() != dto.MetricType_HISTOGRAM || len(f.Metric) == 0 {
			return nil, fmt.Errorf("node %s has no %s metric (is its service proxy running?)", node, name)
		}
		h := f.Metric[0].GetHistogram()
		hist := histogram{count: h.GetSampleCount(), buckets: map[float64]uint64{}}
		for _, b := range h.Bucket {
			hist.buckets[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		out[name] = hist
	}
	return out, nil
}

// quantile is the upper bound of the bucket holding quantile q of the
// observations made between before and after (so a figure is "at most"),
// in milliseconds; NaN without observations.
func quantile(before, after histogram, q float64) float64 {
	n := after.count - before.count
	if n == 0 {
		return math.NaN()
	}
	want := uint64(math.Ceil(q * float64(n)))
	best := math.Inf(1)
	for le, c := range after.buckets {
		if c-before.buckets[le] >= want && le < best {
			best = le
		}
	}
	return best * 1000
}

// runNetprog measures the service proxy's network programming latency,
// from an EndpointSlice change (its last-change-trigger-time) to the
// rules being in place, as upstream's scalability tests do, with
// --services Services of 10 endpoints each present.
func runNetprog(ctx context.Context, o *Options, r *Result) error {
	n := o.Services
	if n <= 0 {
		n = 1000
	}
	changes := o.Changes
	if changes <= 0 {
		changes = 100
	}
	cs, err := clientFor(o.Config, 32)
	if err != nil {
		return err
	}
	node, err := proxiedNode(ctx, cs)
	if err != nil {
		return err
	}
	names := []string{programmingMetric, syncMetric}
	return withNamespace(ctx, cs, "bench-netprog-", func(ns string) error {
		before, err := nodeHistograms(ctx, cs, node.Name, names...)
		if err != nil {
			return err
		}
		// With one Service, then with n more: what a new connection
		// through a Service costs.
		probe, err := startConnectProbe(ctx, cs, ns, node)
		if err != nil {
			r.Notes = append(r.Notes, err.Error())
		} else {
			defer probe.ln.Close()
			if before, err = waitForCount(ctx, cs, node.Name, names, before[programmingMetric].count+1, time.Minute); err != nil {
				return err
			}
			if err := probe.time(ctx, r, "connect_1_service", 1000); err != nil {
				return err
			}
		}
		start := time.Now()
		if err := parallel(ctx, n, 32, func(i int) error {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i)},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
			if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				return err
			}
			_, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, benchSlice(svc.Name, i, 0), metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("creating Services: %w", err)
		}
		r.add("create_services_s", time.Since(start).Seconds(), "s")
		// Every slice's first programming counts once.
		after, err := waitForCount(ctx, cs, node.Name, names, before[programmingMetric].count+uint64(n), 10*time.Minute)
		if err != nil {
			return err
		}
		r.add("services", float64(n), "")
		r.add("all_programmed_s", time.Since(start).Seconds(), "s")
		if probe != nil {
			if err := probe.time(ctx, r, fmt.Sprintf("connect_%d_services", n+1), 1000); err != nil {
				return err
			}
		}
		// Then changes, one at a time, each to one Service's endpoints.
		before = after
		for i := 0; i < changes; i++ {
			s, err := cs.DiscoveryV1().EndpointSlices(ns).Get(ctx, fmt.Sprintf("s%d-bench", i%n), metav1.GetOptions{})
			if err != nil {
				return err
			}
			next := benchSlice(s.Labels[discoveryv1.LabelServiceName], i%n, i+1)
			s.Endpoints, s.Annotations = next.Endpoints, next.Annotations
			if _, err := cs.DiscoveryV1().EndpointSlices(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				return err
			}
			if after, err = waitForCount(ctx, cs, node.Name, names, before[programmingMetric].count+uint64(i+1), time.Minute); err != nil {
				return err
			}
		}
		r.add("changes", float64(changes), "")
		for _, q := range []float64{0.5, 0.99} {
			r.add(fmt.Sprintf("programming_p%g", q*100), quantile(before[programmingMetric], after[programmingMetric], q), "ms≤")
			r.add(fmt.Sprintf("sync_p%g", q*100), quantile(before[syncMetric], after[syncMetric], q), "ms≤")
		}
		return nil
	})
}

// benchSlice is Service name's slice: 10 endpoints in TEST-NET-2 (no
// packet is ever sent to them), shifted by round so that each change
// replaces one endpoint, stamped with the change time.
func benchSlice(name string, i, round int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-bench", Labels: map[string]string{discoveryv1.LabelServiceName: name},
			Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for k := 0; k < 10; k++ {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("198.51.100.%d", (i+k+round)%250+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

// waitForCount scrapes the node's metrics until the programming
// histogram has counted want observations.
func waitForCount(ctx context.Context, cs kubernetes.Interface, node string, names []string, want uint64, budget time.Duration) (map[string]histogram, error) {
	deadline := time.Now().Add(budget)
	for {
		h, err := nodeHistograms(ctx, cs, node, names...)
		if err != nil {
			return nil, err
		}
		if h[programmingMetric].count >= want {
			return h, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the proxy programmed %d of %d changes within %s", h[programmingMetric].count, want, budget)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// parallel runs f(0..n-1) on workers goroutines and returns the first
// error.
func parallel(ctx context.Context, n, workers int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// runDNS measures the node's DNS answerer from one client: queries/s for
// a cluster name (answered from its caches) with --concurrency in
// flight, and the latency of each.
func runDNS(ctx context.Context, o *Options, r *Result) error {
	cs, err := clientFor(o.Config, 8)
	if err != nil {
		return err
	}
	server := o.DNSServer
	if server == "" {
		node, err := proxiedNode(ctx, cs)
		if err != nil {
			return err
		}
		slice, err := cs.DiscoveryV1().EndpointSlices("kube-system").Get(ctx, "kube-dns-"+node.Name, metav1.GetOptions{})
		if err != nil || len(slice.Endpoints) == 0 || len(slice.Ports) == 0 || slice.Ports[0].Port == nil {
			return fmt.Errorf("node %s advertises no DNS answerer (kube-system/kube-dns-%s): give --dns-server", node.Name, node.Name)
		}
		server = net.JoinHostPort(slice.Endpoints[0].Addresses[0], fmt.Sprint(*slice.Ports[0].Port))
	}
	d := o.Duration
	if d <= 0 {
		d = 5 * time.Second
	}
	const name = "kubernetes.default.svc.cluster.local."
	for _, conc := range o.Concurrency {
		var mu sync.Mutex
		var lat latencies
		errs := 0
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for w := 0; w < conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := mdns.Dial("udp", server)
				if err != nil {
					mu.Lock()
					errs++
					mu.Unlock()
					return
				}
				defer conn.Close()
				c := &mdns.Client{Timeout: 2 * time.Second}
				var mine latencies
				bad := 0
				for time.Now().Before(deadline) && ctx.Err() == nil {
					m := new(mdns.Msg)
					m.SetQuestion(name, mdns.TypeA)
					resp, rtt, err := c.ExchangeWithConnContext(ctx, m, conn)
					if err != nil || resp.Rcode != mdns.RcodeSuccess || len(resp.Answer) == 0 {
						bad++
						continue
					}
					mine = append(mine, rtt)
				}
				mu.Lock()
				lat = append(lat, mine...)
				errs += bad
				mu.Unlock()
			}()
		}
		wg.Wait()
		prefix := fmt.Sprintf("c%d", conc)
		r.add(prefix+"_qps", float64(len(lat))/d.Seconds(), "1/s")
		lat.addTo(r, prefix+"_latency")
		r.add(prefix+"_errors", float64(errs), "")
	}
	r.Notes = append(r.Notes, "queries to "+server+" for "+name)
	return nil
}

// connectProbe is a Service whose one endpoint is a listener of the
// bench process on the proxied node's address: connecting to its
// ClusterIP goes through the proxy's rules, so the time a connection
// takes shows what a new connection's first packet pays for the lookups
// (which should not grow with the number of Services).
type connectProbe struct {
	ln     net.Listener
	target string // ClusterIP:port
}

// startConnectProbe listens on node's InternalIP and makes the Service
// and its slice in ns. It fails when the bench does not run on node.
func startConnectProbe(ctx context.Context, cs kubernetes.Interface, ns string, node *corev1.Node) (*connectProbe, error) {
	var ip string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && net.ParseIP(a.Address).To4() != nil {
			ip = a.Address
			break
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if ip == "" || err != nil {
		return nil, fmt.Errorf("connection times need the bench on node %s (listening on its address %q: %v)", node.Name, ip, err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tcp", Port: 80}}}}, metav1.CreateOptions{})
	if err == nil {
		port := int32(ln.Addr().(*net.TCPAddr).Port)
		_, err = cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "probe-bench", Labels: map[string]string{discoveryv1.LabelServiceName: "probe"},
				// Stamped, so that the proxy counts its programming.
				Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("tcp"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		}, metav1.CreateOptions{})
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("creating the probe Service: %w", err)
	}
	return &connectProbe{ln: ln, target: net.JoinHostPort(svc.Spec.ClusterIP, "80")}, nil
}

// time connects to the probe's ClusterIP n times, one after the other,
// and adds the p50 and p99 of the connection times as name_p50/_p99.
// Call it only once the proxy has programmed the probe's Service at
// least as a rejected address of the service range: until its own rules
// are in place (up to a minute) the connection is refused on the node.
func (p *connectProbe) time(ctx context.Context, r *Result, name string, n int) error {
	took := make([]time.Duration, 0, n)
	d := net.Dialer{Timeout: time.Second}
	for deadline := time.Now().Add(time.Minute); ; {
		c, err := d.DialContext(ctx, "tcp", p.target)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the probe Service %s did not answer within a minute: %w", p.target, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		start := time.Now()
		c, err := d.DialContext(ctx, "tcp", p.target)
		if err != nil {
			return fmt.Errorf("connecting to the probe Service %s: %w", p.target, err)
		}
		took = append(took, time.Since(start))
		c.Close()
	}
	slices.Sort(took)
	for _, q := range []float64{0.5, 0.99} {
		r.add(fmt.Sprintf("%s_p%g", name, q*100), float64(took[int(q*float64(len(took)-1))].Microseconds())/1000, "ms")
	}
	return nil
}
