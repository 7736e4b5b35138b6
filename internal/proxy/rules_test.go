package proxy

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/knftables"
)

func ptr[T any](v T) *T { return &v }

var testNode = &Node{
	Name:         "n1",
	Zone:         "zone-a",
	Addresses:    []netip.Addr{netip.MustParseAddr("192.0.2.10")},
	PodCIDR:      netip.MustParsePrefix("10.42.0.0/24"),
	ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")},
}

func service(name string, mut func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")}},
		},
	}
	if mut != nil {
		mut(s)
	}
	return s
}

type ep struct {
	ip, node           string
	ready, terminating bool
	forNodes           []string
}

func slice(svc string, port int32, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: svc + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(port), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, e := range eps {
		x := discoveryv1.Endpoint{Addresses: []string{e.ip}, NodeName: ptr(e.node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(e.ready), Serving: ptr(e.ready || e.terminating), Terminating: ptr(e.terminating)}}
		if e.forNodes != nil {
			x.Hints = &discoveryv1.EndpointHints{}
			for _, n := range e.forNodes {
				x.Hints.ForNodes = append(x.Hints.ForNodes, discoveryv1.ForNode{Name: n})
			}
		}
		s.Endpoints = append(s.Endpoints, x)
	}
	return s
}

func endpointsOf(eps []endpoint) []string {
	var out []string
	for _, e := range eps {
		out = append(out, e.String())
	}
	return out
}

func TestServicePortsChoosesEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name           string
		svc            *corev1.Service
		slice          *discoveryv1.EndpointSlice
		cluster, local []string
	}{
		{"ready only", service("a", nil), slice("a", 8080,
			ep{ip: "10.42.0.5", node: "n1", ready: true}, ep{ip: "10.42.1.5", node: "n2", ready: true}, ep{ip: "10.42.0.6", node: "n1"}),
			[]string{"10.42.0.5:8080", "10.42.1.5:8080"}, []string{"10.42.0.5:8080"}},
		{"terminating when none is ready", service("a", nil), slice("a", 8080,
			ep{ip: "10.42.0.5", node: "n1", terminating: true}, ep{ip: "10.42.0.6", node: "n1"}),
			[]string{"10.42.0.5:8080"}, []string{"10.42.0.5:8080"}},
		{"hints for this node", service("a", func(s *corev1.Service) { s.Spec.TrafficDistribution = ptr("PreferSameNode") }), slice("a", 53,
			ep{ip: "192.0.2.10", node: "n1", ready: true, forNodes: []string{"n1"}}, ep{ip: "192.0.2.11", node: "n2", ready: true, forNodes: []string{"n2"}}),
			[]string{"192.0.2.10:53"}, []string{"192.0.2.10:53"}},
		{"hints ignored without trafficDistribution", service("a", nil), slice("a", 53,
			ep{ip: "192.0.2.10", node: "n1", ready: true, forNodes: []string{"n1"}}, ep{ip: "192.0.2.11", node: "n2", ready: true, forNodes: []string{"n2"}}),
			[]string{"192.0.2.10:53", "192.0.2.11:53"}, []string{"192.0.2.10:53"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sps := servicePorts(tc.svc, []*discoveryv1.EndpointSlice{tc.slice}, testNode, false)
			if len(sps) != 1 {
				t.Fatalf("%d ports", len(sps))
			}
			if got := endpointsOf(sps[0].cluster); !slices.Equal(got, tc.cluster) {
				t.Errorf("cluster endpoints %v, want %v", got, tc.cluster)
			}
			if got := endpointsOf(sps[0].local); !slices.Equal(got, tc.local) {
				t.Errorf("local endpoints %v, want %v", got, tc.local)
			}
		})
	}
}

func renderOf(svc *corev1.Service, s *discoveryv1.EndpointSlice, listening map[hostPort]bool) serviceRules {
	held := func(p hostPort) bool { return listening[p] }
	var sl []*discoveryv1.EndpointSlice
	if s != nil {
		sl = append(sl, s)
	}
	return ipv4.render(svc, servicePorts(svc, sl, testNode, false), testNode, held)
}

func elementsOf(r serviceRules) []string {
	var out []string
	for _, e := range r.elements {
		out = append(out, e.container+" "+e.key+" "+e.value)
	}
	slices.Sort(out)
	return out
}

func TestRenderClusterIP(t *testing.T) {
	r := renderOf(service("web", nil), slice("web", 8080, ep{ip: "10.42.0.5", node: "n1", ready: true}, ep{ip: "10.42.0.6", node: "n1", ready: true}), nil)
	tag := chainTag("default/web/tcp/http")
	want := []string{"cluster-ips 10.96.0.20 ", "service-ips 10.96.0.20 . tcp . 80 goto svc-" + tag}
	if got := elementsOf(r); !slices.Equal(got, want) {
		t.Fatalf("elements %q, want %q", got, want)
	}
	if svc := r.chains["svc-"+tag]; !slices.Equal(svc, []string{"ip saddr != 10.42.0.0/24 jump mark-for-masquerade"}) {
		t.Fatalf("service chain %q, want the masquerade rule (the DNAT rule comes with the pool's slots)", svc)
	}
	if p := r.pools["svc-"+tag]; p.proto != "tcp" || !slices.Equal(p.targets, []string{"10.42.0.5 . 8080", "10.42.0.6 . 8080"}) {
		t.Fatalf("pool %+v", p)
	}
	if len(r.chains) != 1 {
		t.Fatalf("chains %v, want the service's only (no affinity: no endpoint chains)", r.chains)
	}
	if want := []netip.Addr{netip.MustParseAddr("10.42.0.5"), netip.MustParseAddr("10.42.0.6")}; !slices.Equal(r.hairpin, want) {
		t.Fatalf("hairpin %v, want %v", r.hairpin, want)
	}
}

func TestRenderWithoutEndpointsRejects(t *testing.T) {
	r := renderOf(service("web", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30080
	}), nil, nil)
	want := []string{"cluster-ips 10.96.0.20 ", "no-endpoint-nodeports tcp . 30080 goto reject-chain", "no-endpoint-services 10.96.0.20 . tcp . 80 goto reject-chain"}
	if got := elementsOf(r); !slices.Equal(got, want) {
		t.Fatalf("elements %q, want %q", got, want)
	}
	if len(r.chains) != 0 {
		t.Fatalf("chains %v", r.chains)
	}
}

func TestRenderNodePortLocalAffinityAndClash(t *testing.T) {
	svc := service("web", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 30999
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	})
	sl := slice("web", 8080, ep{ip: "10.42.0.5", node: "n1", ready: true}, ep{ip: "10.42.1.5", node: "n2", ready: true})
	r := renderOf(svc, sl, nil)
	tag := chainTag("default/web/tcp/http")
	ext := r.chains["ext-"+tag]
	if len(ext) != 4 || ext[0] != "ip saddr 10.42.0.0/24 goto svc-"+tag || ext[1] != "fib saddr type local goto svc-"+tag ||
		!strings.HasPrefix(ext[2], "ip saddr @aff-") || !strings.HasPrefix(ext[3], "goto ep-") {
		t.Fatalf("external chain %q", ext)
	}
	if len(r.sets) != 2 {
		t.Fatalf("affinity sets %v, want one per endpoint", r.sets)
	}
	if r.healthCheck == nil || r.healthCheck.port != 30999 || r.healthCheck.localEndpoints != 1 {
		t.Fatalf("health check %+v", r.healthCheck)
	}
	got := elementsOf(r)
	if !slices.Contains(got, "service-nodeports tcp . 30080 goto ext-"+tag) || !slices.Contains(got, "service-ips 192.0.2.10 . tcp . 80 goto ext-"+tag) {
		t.Fatalf("elements %q", got)
	}
	// A host process on port 80 and on the node port: neither is taken.
	r = renderOf(svc, sl, map[hostPort]bool{{corev1.ProtocolTCP, 80}: true, {corev1.ProtocolTCP, 30080}: true})
	if got := elementsOf(r); len(got) != 2 || len(r.warnings) != 2 {
		t.Fatalf("elements %q, warnings %q", got, r.warnings)
	}
}

// TestTableStateIncremental checks that a change to one Service rewrites
// only its chains and elements, and that a replaced endpoint is only a
// changed slot.
func TestTableStateIncremental(t *testing.T) {
	st := newTableState(ipv4)
	web := func(eps ...ep) serviceRules {
		return renderOf(service("web", nil), slice("web", 8080, eps...), nil)
	}
	step := func(r serviceRules) string {
		tx := (&fakeNFT{}).tx()
		st.update(tx, "default/web", r)
		return tx.String()
	}
	first := step(web(ep{ip: "10.42.0.5", node: "n1", ready: true}))
	for _, want := range []string{
		"add element ip plainkube service-ips { 10.96.0.20 . tcp . 80 : goto svc-",
		"add element ip plainkube endpoint-slots-tcp { 0 : 10.42.0.5 . 8080 }",
		"add element ip plainkube hairpin-pairs { 10.42.0.5 . 10.42.0.5 }",
		"dnat ip to numgen random mod 1 offset 0 map @endpoint-slots-tcp",
	} {
		if !strings.Contains(first, want) {
			t.Fatalf("first transaction lacks %q:\n%s", want, first)
		}
	}
	// Another endpoint instead: its slot changes, nothing else.
	second := step(web(ep{ip: "10.42.0.6", node: "n1", ready: true}))
	want := "delete element ip plainkube endpoint-slots-tcp { 0 }\n" +
		"add element ip plainkube endpoint-slots-tcp { 0 : 10.42.0.6 . 8080 }\n"
	if !strings.Contains(second, want) || strings.Contains(second, "chain") || strings.Contains(second, "service-ips") ||
		!strings.Contains(second, "add element ip plainkube hairpin-pairs { 10.42.0.6 . 10.42.0.6 }") ||
		!strings.Contains(second, "delete element ip plainkube hairpin-pairs { 10.42.0.5 . 10.42.0.5 }") {
		t.Fatalf("second transaction:\n%s", second)
	}
	// A second endpoint: a new range of two slots, the chain's rule
	// points there, the old slot goes; the map element stays.
	third := step(web(ep{ip: "10.42.0.6", node: "n1", ready: true}, ep{ip: "10.42.0.7", node: "n1", ready: true}))
	if !strings.Contains(third, "flush chain ip plainkube svc-") || !strings.Contains(third, "mod 2 offset 1 map @endpoint-slots-tcp") ||
		!strings.Contains(third, "delete element ip plainkube endpoint-slots-tcp { 0 }") || strings.Contains(third, "service-ips") || strings.Contains(third, "add chain") {
		t.Fatalf("third transaction:\n%s", third)
	}
	// Gone: everything it added is removed, and its slots are given back.
	fourth := step(serviceRules{})
	if strings.Count(fourth, "delete chain") != 1 || !strings.Contains(fourth, "delete element ip plainkube service-ips") ||
		strings.Count(fourth, "delete element ip plainkube endpoint-slots-tcp") != 2 || strings.Count(fourth, "delete element ip plainkube hairpin-pairs") != 2 || len(st.applied) != 0 {
		t.Fatalf("fourth transaction:\n%s", fourth)
	}
	if got := st.slots.take(2); got.base != 1 {
		t.Fatalf("a pool of two after the Service went got slots %v, want the ones it gave back", got)
	}
}

// TestHairpinSharedEndpoint: an address two Services send to keeps its
// hairpin pair until the second lets go.
func TestHairpinSharedEndpoint(t *testing.T) {
	st := newTableState(ipv4)
	shared := ep{ip: "10.42.0.5", node: "n1", ready: true}
	a := renderOf(service("a", nil), slice("a", 8080, shared), nil)
	b := renderOf(service("b", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.21", []string{"10.96.0.21"} }), slice("b", 8080, shared), nil)
	for _, step := range []struct {
		key     string
		r       serviceRules
		add, rm int
	}{{"default/a", a, 1, 0}, {"default/b", b, 0, 0}, {"default/a", serviceRules{}, 0, 0}, {"default/b", serviceRules{}, 0, 1}} {
		tx := (&fakeNFT{}).tx()
		st.update(tx, step.key, step.r)
		out := tx.String()
		if strings.Count(out, "add element ip plainkube hairpin-pairs") != step.add || strings.Count(out, "delete element ip plainkube hairpin-pairs") != step.rm {
			t.Fatalf("%s: want %d hairpin adds and %d deletes:\n%s", step.key, step.add, step.rm, out)
		}
	}
}

// TestExternalAddressClaimedOnce: two Services on one external address
// and port; the second waits until the first lets go.
func TestExternalAddressClaimedOnce(t *testing.T) {
	st := newTableState(ipv4)
	withExt := func(name, ip string) serviceRules {
		return renderOf(service(name, func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = ip, []string{ip}
			s.Spec.ExternalIPs = []string{"192.0.2.99"}
		}), slice(name, 8080, ep{ip: "10.42.0.5", node: "n1", ready: true}), nil)
	}
	st.update((&fakeNFT{}).tx(), "default/a", withExt("a", "10.96.0.21"))
	st.update((&fakeNFT{}).tx(), "default/b", withExt("b", "10.96.0.22"))
	if w := st.applied["default/b"].warnings; len(w) != 1 || !strings.Contains(w[0], "default/a") {
		t.Fatalf("b's warnings %q", w)
	}
	if retry := st.update((&fakeNFT{}).tx(), "default/a", serviceRules{}); !slices.Equal(retry, []string{"default/b"}) {
		t.Fatalf("retry %v, want b", retry)
	}
}

type fakeNFT struct{}

func (fakeNFT) tx() *knftables.Transaction {
	return knftables.NewFake(knftables.IPv4Family, DefaultTable).NewTransaction()
}

// TestRulesLoadIntoNftables writes a full table with real nft (root
// only), in a table of the test's own, so that the rule syntax is checked
// by the kernel.
func TestRulesLoadIntoNftables(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is not installed")
	}
	name := "plainkube-test-" + strings.ReplaceAll(t.Name(), "/", "-")
	nft, err := knftables.New(knftables.IPv4Family, name)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer func() {
		RemoveTables(ctx, name)
	}()
	svc := service("web", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	})
	rules := map[string]serviceRules{
		"default/web": renderOf(svc, slice("web", 8080, ep{ip: "10.42.0.5", node: "n1", ready: true}, ep{ip: "10.42.1.5", node: "n2", ready: true}), nil),
		"default/plain": renderOf(service("plain", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.31", []string{"10.96.0.31"} }),
			slice("plain", 8080, ep{ip: "10.42.0.7", node: "n1", ready: true}, ep{ip: "10.42.1.7", node: "n2", ready: true}), nil),
		"default/empty": renderOf(service("empty", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.30", []string{"10.96.0.30"} }), nil, nil),
	}
	st := newTableState(ipv4)
	for i := 0; i < 2; i++ { // the second time over an existing table
		existing, err := nft.ListAll(ctx)
		if err != nil && !knftables.IsNotFound(err) {
			t.Fatal(err)
		}
		tx := nft.NewTransaction()
		st.full(tx, testNode, rules, existing)
		if err := nft.Run(ctx, tx); err != nil {
			t.Fatalf("full sync %d: %v\n%s", i, err, tx)
		}
	}
	// Incremental: one Service goes, one endpoint goes.
	tx := nft.NewTransaction()
	st.update(tx, "default/empty", serviceRules{})
	st.update(tx, "default/web", renderOf(svc, slice("web", 8080, ep{ip: "10.42.0.5", node: "n1", ready: true}), nil))
	if err := nft.Run(ctx, tx); err != nil {
		t.Fatalf("partial sync: %v\n%s", err, tx)
	}
	out, err := exec.Command("nft", "list", "table", "ip", name).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "10.96.0.20 . tcp . 80 : goto svc-") || !strings.Contains(string(out), "dnat ip to numgen random mod 2 map @endpoint-slots-tcp") || !strings.Contains(string(out), ": 10.42.0.7 . 8080") ||
		!strings.Contains(string(out), "10.42.0.7 . 10.42.0.7") || strings.Contains(string(out), "10.96.0.30") || strings.Contains(string(out), "10.42.1.5") {
		t.Fatalf("table after the partial sync:\n%s", out)
	}
}

// TestStaleUDP: an endpoint that leaves a UDP Service leaves stale
// conntrack flows for each of the Service's destinations; one that stays
// does not.
func TestStaleUDP(t *testing.T) {
	udp := func(eps ...ep) serviceRules {
		svc := service("dns", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 53, Protocol: corev1.ProtocolUDP, NodePort: 30053}}
		})
		sl := slice("dns", 5353, eps...)
		sl.Ports[0].Protocol = ptr(corev1.ProtocolUDP)
		return renderOf(svc, sl, nil)
	}
	old := udp(ep{ip: "10.42.0.5", node: "n1", ready: true}, ep{ip: "10.42.0.6", node: "n1", ready: true})
	cur := udp(ep{ip: "10.42.0.6", node: "n1", ready: true})
	var got []string
	for _, f := range staleUDP(old, cur) {
		got = append(got, f.dst.String()+" via "+f.endpoint.String())
	}
	slices.Sort(got)
	want := []string{"10.96.0.20:53 via 10.42.0.5", "192.0.2.10:30053 via 10.42.0.5"}
	if !slices.Equal(got, want) {
		t.Fatalf("stale flows %q, want %q", got, want)
	}
	if f := staleUDP(cur, cur); len(f) != 0 {
		t.Fatalf("no change, stale flows %v", f)
	}
	if f := staleUDP(cur, serviceRules{}); len(f) != 2 {
		t.Fatalf("Service gone: stale flows %v, want both destinations", f)
	}
}

// TestIPv6RulesLoadIntoNftables writes an IPv6 table (a service range of
// IPv6) with real nft (root only): affinity and plain Services, a
// NodePort without endpoints.
func TestIPv6RulesLoadIntoNftables(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is not installed")
	}
	name := "plainkube-test-ipv6"
	nft, err := knftables.New(knftables.IPv6Family, name)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer RemoveTables(ctx, name)
	node := &Node{Name: "n1", Addresses: []netip.Addr{netip.MustParseAddr("2001:db8::10")},
		PodCIDR: netip.MustParsePrefix("fd00:42::/64"), ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("fd00:96::/108")}}
	v6 := func(name, ip string, affinity bool, eps ...string) serviceRules {
		svc := service(name, func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = ip, []string{ip}
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
			if affinity {
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.Ports[0].NodePort = 30081
			}
		})
		sl := slice(name, 8080)
		sl.AddressType = discoveryv1.AddressTypeIPv6
		for _, e := range eps {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{e}, NodeName: ptr("n1"),
				Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}})
		}
		return ipv6.render(svc, servicePorts(svc, []*discoveryv1.EndpointSlice{sl}, node, true), node, func(hostPort) bool { return false })
	}
	rules := map[string]serviceRules{
		"default/plain":  v6("plain", "fd00:96::20", false, "fd00:42::5", "fd00:42::6"),
		"default/sticky": v6("sticky", "fd00:96::21", true, "fd00:42::5", "fd00:42::6"),
		"default/empty":  v6("empty", "fd00:96::22", false),
	}
	tx := nft.NewTransaction()
	newTableState(ipv6).full(tx, node, rules, nil)
	if err := nft.Run(ctx, tx); err != nil {
		t.Fatalf("IPv6 full sync: %v\n%s", err, tx)
	}
	out, err := exec.Command("nft", "list", "table", "ip6", name).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dnat ip6 to numgen random mod 2 map @endpoint-slots-tcp") || !strings.Contains(string(out), "1 : fd00:42::6 . 8080") {
		t.Fatalf("%v:\n%s", err, out)
	}
}

// BenchmarkStatePerService reports the bytes the proxy's own state (the
// rendered rules it keeps per Service, beside the informers' objects)
// holds per Service of 10 endpoints, with 10,000 Services.
func BenchmarkStatePerService(b *testing.B) {
	const n = 10000
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		st := newTableState(ipv4)
		tx := (&fakeNFT{}).tx()
		services := map[string]serviceRules{}
		for i := range n {
			name := fmt.Sprintf("s%d", i)
			ip := fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)
			var eps []ep
			for k := range 10 {
				eps = append(eps, ep{ip: fmt.Sprintf("10.42.%d.%d", k, i%250+1), node: "n1", ready: true})
			}
			services["default/"+name] = renderOf(service(name, func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = ip, []string{ip} }), slice(name, 8080, eps...), nil)
		}
		st.full(tx, testNode, services, nil)
		tx = nil
		services = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/Service")
		runtime.KeepAlive(st)
	}
}

func TestOutermostServiceCIDRs(t *testing.T) {
	pp := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	got := outermost(pp("10.96.5.0/24", "10.96.0.0/12", "10.200.0.0/24", "10.96.0.0/12", "fd00::/108", "fd00::/112"))
	want := pp("10.96.0.0/12", "10.200.0.0/24", "fd00::/108")
	if !slices.Equal(got, want) {
		t.Fatalf("outermost: %v, want %v", got, want)
	}
}
