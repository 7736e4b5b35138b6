package netpol

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/knftables"
)

const thisNode = "n1"

// nodeIP is the node's own address in the flows below.
var nodeIP = netip.MustParseAddr("192.168.1.10")

type podSpec struct {
	ns, name, ip, node string
	labels             map[string]string
	ports              []corev1.ContainerPort
	hostNetwork        bool
}

func makePod(s podSpec) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name, Labels: s.labels},
		Spec: corev1.PodSpec{NodeName: s.node, HostNetwork: s.hostNetwork,
			Containers: []corev1.Container{{Name: "c", Ports: s.ports}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: s.ip, PodIPs: []corev1.PodIP{{IP: s.ip}}},
	}
	return p
}

func makeState(pods ...podSpec) *State {
	s := &State{NodeName: thisNode, Namespaces: map[string]map[string]string{
		"x": {"ns": "x", "kubernetes.io/metadata.name": "x"},
		"y": {"ns": "y", "kubernetes.io/metadata.name": "y"},
	}, Pods: map[string][]*corev1.Pod{}}
	for _, p := range pods {
		s.Pods[p.ns] = append(s.Pods[p.ns], makePod(p))
	}
	return s
}

// The cluster of the table tests: namespaces x and y; pods on this node
// (x/a, x/b, x/c, y/a, the host-network x/h) and on another (y/b).
var testPods = []podSpec{
	{ns: "x", name: "a", ip: "10.1.0.1", node: thisNode, labels: map[string]string{"pod": "a"}, ports: []corev1.ContainerPort{
		{Name: "serve-80", ContainerPort: 80}, {Name: "serve-81-udp", ContainerPort: 81, Protocol: corev1.ProtocolUDP}}},
	{ns: "x", name: "b", ip: "10.1.0.2", node: thisNode, labels: map[string]string{"pod": "b", "app": "client"}},
	{ns: "x", name: "c", ip: "10.1.0.3", node: thisNode, labels: map[string]string{"pod": "c"},
		ports: []corev1.ContainerPort{{Name: "serve-80", ContainerPort: 8080}}},
	{ns: "y", name: "a", ip: "10.1.0.4", node: thisNode, labels: map[string]string{"pod": "a", "app": "client"}},
	{ns: "y", name: "b", ip: "10.2.0.1", node: "n2", labels: map[string]string{"pod": "b"},
		ports: []corev1.ContainerPort{{Name: "serve-80", ContainerPort: 80}}},
	{ns: "x", name: "h", ip: "192.168.1.10", node: thisNode, labels: map[string]string{"pod": "a"}, hostNetwork: true},
}

var addrOfPod = map[string]netip.Addr{
	"x/a": netip.MustParseAddr("10.1.0.1"), "x/b": netip.MustParseAddr("10.1.0.2"), "x/c": netip.MustParseAddr("10.1.0.3"),
	"y/a": netip.MustParseAddr("10.1.0.4"), "y/b": netip.MustParseAddr("10.2.0.1"), "node": nodeIP,
	"outside": netip.MustParseAddr("8.8.8.8"),
}

func policy(ns, name string, sel map[string]string, types []networkingv1.PolicyType, in []networkingv1.NetworkPolicyIngressRule, eg []networkingv1.NetworkPolicyEgressRule) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: types, Ingress: in, Egress: eg}}
}

func podPeer(l map[string]string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: l}}
}

func nsPeer(l map[string]string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: l}}
}

func blockPeer(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
}

func port(proto corev1.Protocol, p intstr.IntOrString, end ...int32) networkingv1.NetworkPolicyPort {
	np := networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
	if len(end) > 0 {
		np.EndPort = &end[0]
	}
	return np
}

var (
	tcp, udp, sctp = corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP
	ingressOnly    = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egressOnly     = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	all            = map[string]string{}
)

// check is one flow and whether it passes: "x/b>x/a tcp/80".
type check struct {
	flow string
	pass bool
}

func parseFlow(t *testing.T, s string) flow {
	t.Helper()
	ends, l4, _ := strings.Cut(s, " ")
	from, to, _ := strings.Cut(ends, ">")
	fl := flow{src: addrOfPod[from], dst: addrOfPod[to], fromNode: from == "node"}
	if l4 != "icmp" {
		proto, p, _ := strings.Cut(l4, "/")
		fl.proto = proto
		n, _ := strconv.Atoi(p)
		fl.port = uint16(n)
	}
	return fl
}

func TestPolicyVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policies []*networkingv1.NetworkPolicy
		checks   []check
	}{
		{
			name:   "no policy allows everything",
			checks: []check{{"x/b>x/a tcp/80", true}, {"y/b>x/a udp/53", true}, {"x/a>outside tcp/443", true}},
		},
		{
			name:     "default-deny ingress isolates every pod of the namespace, not egress, not the node's traffic",
			policies: []*networkingv1.NetworkPolicy{policy("x", "deny", all, ingressOnly, nil, nil)},
			checks: []check{
				{"y/a>x/a tcp/80", false}, {"x/b>x/a tcp/80", false}, {"y/b>x/c tcp/80", false}, {"x/a>x/b icmp", false},
				{"x/a>y/a tcp/80", true}, {"node>x/a tcp/80", true}, {"x/a>outside tcp/443", true},
			},
		},
		{
			name: "allow app=client on 8080 admits exactly that client and port",
			policies: []*networkingv1.NetworkPolicy{policy("x", "allow", map[string]string{"pod": "a"}, nil,
				[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{podPeer(map[string]string{"app": "client"})},
					Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromInt32(8080))}}}, nil)},
			checks: []check{
				{"x/b>x/a tcp/8080", true}, {"x/b>x/a tcp/80", false}, {"x/b>x/a udp/8080", false},
				{"y/a>x/a tcp/8080", false}, {"x/c>x/a tcp/8080", false}, {"x/c>x/b tcp/8080", true},
			},
		},
		{
			name: "namespaceSelector admits every pod of the namespaces, on any node",
			policies: []*networkingv1.NetworkPolicy{policy("x", "from-y", map[string]string{"pod": "a"}, nil,
				[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{nsPeer(map[string]string{"ns": "y"})}}}, nil)},
			checks: []check{{"y/a>x/a tcp/80", true}, {"y/b>x/a udp/9", true}, {"y/b>x/a icmp", true}, {"x/b>x/a tcp/80", false}},
		},
		{
			name: "namespaceSelector and podSelector in one peer admit the pods matching both",
			policies: []*networkingv1.NetworkPolicy{policy("x", "both", map[string]string{"pod": "a"}, nil,
				[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ns": "y"}},
					PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}}}}}}, nil)},
			checks: []check{{"y/a>x/a tcp/80", true}, {"y/b>x/a tcp/80", false}, {"x/b>x/a tcp/80", false}},
		},
		{
			name: "namespaceSelector and podSelector as two peers admit either",
			policies: []*networkingv1.NetworkPolicy{policy("x", "either", map[string]string{"pod": "a"}, nil,
				[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
					nsPeer(map[string]string{"ns": "y"}), podPeer(map[string]string{"app": "client"})}}}, nil)},
			checks: []check{{"y/a>x/a tcp/80", true}, {"y/b>x/a tcp/80", true}, {"x/b>x/a tcp/80", true}, {"x/c>x/a tcp/80", false}},
		},
		{
			name: "egress ipBlock with except stops the excepted destination",
			policies: []*networkingv1.NetworkPolicy{policy("x", "cidr", map[string]string{"pod": "a"}, egressOnly, nil,
				[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{blockPeer("10.1.0.0/16", "10.1.0.3/32")}}})},
			checks: []check{
				{"x/a>x/b tcp/80", true}, {"x/a>y/a udp/53", true}, {"x/a>x/c tcp/80", false}, {"x/a>y/b tcp/80", false},
				{"x/a>outside tcp/443", false}, {"x/a>node udp/53", false}, {"x/b>x/c tcp/80", true}, {"x/c>x/a tcp/80", true},
			},
		},
		{
			name: "an address in one block's except and another block is admitted",
			policies: []*networkingv1.NetworkPolicy{policy("x", "cidr", map[string]string{"pod": "a"}, egressOnly, nil,
				[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{
					blockPeer("10.1.0.0/16", "10.1.0.3/32"), blockPeer("10.1.0.3/32")}}})},
			checks: []check{{"x/a>x/c tcp/80", true}, {"x/a>x/b tcp/80", true}, {"x/a>y/b tcp/80", false}},
		},
		{
			name: "ingress named ports resolve on the selected pod, protocol included",
			policies: []*networkingv1.NetworkPolicy{policy("x", "named", all, nil,
				[]networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{
					port(tcp, intstr.FromString("serve-80")), port(udp, intstr.FromString("serve-81-udp"))}}}, nil)},
			checks: []check{
				{"x/b>x/a tcp/80", true}, {"y/b>x/a tcp/80", true}, {"x/b>x/a udp/81", true}, {"x/b>x/a tcp/81", false},
				{"x/b>x/a udp/80", false}, {"x/a>x/c tcp/8080", true}, {"x/a>x/c tcp/80", false}, {"x/a>x/b tcp/80", false},
			},
		},
		{
			name: "a named port no pod has admits nothing",
			policies: []*networkingv1.NetworkPolicy{policy("x", "none", map[string]string{"pod": "a"}, nil,
				[]networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromString("no-such-port"))}}}, nil)},
			checks: []check{{"x/b>x/a tcp/80", false}, {"x/b>x/a tcp/81", false}},
		},
		{
			name: "egress named ports resolve on the destination pods, on any node",
			policies: []*networkingv1.NetworkPolicy{policy("x", "named", map[string]string{"pod": "b"}, nil, nil,
				[]networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromString("serve-80"))}}})},
			checks: []check{
				{"x/b>x/a tcp/80", true}, {"x/b>y/b tcp/80", true}, {"x/b>x/c tcp/8080", true}, {"x/b>x/c tcp/80", false},
				{"x/b>y/a tcp/80", false}, {"x/b>outside tcp/80", false}, {"x/c>y/a tcp/80", true},
			},
		},
		{
			name: "egress named ports to an ipBlock: the pods inside it",
			policies: []*networkingv1.NetworkPolicy{policy("x", "named", map[string]string{"pod": "b"}, nil, nil,
				[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{blockPeer("10.1.0.0/24")},
					Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromString("serve-80"))}}})},
			checks: []check{{"x/b>x/a tcp/80", true}, {"x/b>y/b tcp/80", false}, {"x/b>x/c tcp/8080", true}},
		},
		{
			name: "endPort ranges, protocols without a port, SCTP",
			policies: []*networkingv1.NetworkPolicy{policy("x", "ports", map[string]string{"pod": "a"}, nil,
				[]networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{
					port(tcp, intstr.FromInt32(8000), 8100), {Protocol: &udp}, port(sctp, intstr.FromInt32(80))}}}, nil)},
			checks: []check{
				{"x/b>x/a tcp/8000", true}, {"x/b>x/a tcp/8050", true}, {"x/b>x/a tcp/8100", true}, {"x/b>x/a tcp/8101", false},
				{"x/b>x/a udp/1234", true}, {"x/b>x/a sctp/80", true}, {"x/b>x/a tcp/80", false}, {"x/b>x/a sctp/81", false},
				{"x/b>x/a icmp", false},
			},
		},
		{
			name: "without policyTypes: egress governed when it has egress rules",
			policies: []*networkingv1.NetworkPolicy{policy("x", "both", map[string]string{"pod": "a"}, nil, nil,
				[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{podPeer(map[string]string{"pod": "b"})}}})},
			checks: []check{{"x/a>x/b tcp/80", true}, {"x/a>x/c tcp/80", false}, {"x/b>x/a tcp/80", false}},
		},
		{
			name:     "egress-only policy with no rules denies all egress, not ingress",
			policies: []*networkingv1.NetworkPolicy{policy("x", "deny-egress", map[string]string{"pod": "a"}, egressOnly, nil, nil)},
			checks:   []check{{"x/a>x/b tcp/80", false}, {"x/a>node udp/53", false}, {"x/b>x/a tcp/80", true}},
		},
		{
			name: "policies add up: an allow-all beside a deny-all allows",
			policies: []*networkingv1.NetworkPolicy{
				policy("x", "deny", all, ingressOnly, nil, nil),
				policy("x", "allow-all", map[string]string{"pod": "a"}, ingressOnly, []networkingv1.NetworkPolicyIngressRule{{}}, nil),
			},
			checks: []check{{"y/b>x/a tcp/80", true}, {"y/b>x/b tcp/80", false}},
		},
		{
			name: "egress denied at the source even when the destination admits it",
			policies: []*networkingv1.NetworkPolicy{
				policy("x", "deny-egress", map[string]string{"pod": "b"}, egressOnly, nil, nil),
				policy("x", "allow-in", map[string]string{"pod": "a"}, ingressOnly, []networkingv1.NetworkPolicyIngressRule{{}}, nil),
			},
			checks: []check{{"x/b>x/a tcp/80", false}, {"x/c>x/a tcp/80", true}},
		},
		{
			name: "host-network pods are not selected; other nodes' pods are enforced there",
			policies: []*networkingv1.NetworkPolicy{
				policy("x", "deny", map[string]string{"pod": "a"}, ingressOnly, nil, nil),
				policy("y", "deny", all, ingressOnly, nil, nil),
			},
			checks: []check{{"x/b>node tcp/80", true}, {"x/b>y/b tcp/80", true}, {"x/b>y/a tcp/80", false}, {"x/b>x/a tcp/80", false}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newTableState(ipv4)
			updates := map[string]*compiled{}
			s := makeState(testPods...)
			for _, np := range tc.policies {
				updates[np.Namespace+"/"+np.Name] = compile(np, s, ipv4)
			}
			fake := knftables.NewFake(knftables.IPv4Family, DefaultTable)
			tx := fake.NewTransaction()
			st.full(tx, updates)
			if err := fake.Run(t.Context(), tx); err != nil {
				t.Fatalf("the rendered table does not load: %v\n%s", err, tx)
			}
			j := st.judge()
			for _, c := range tc.checks {
				if got := j.allows(parseFlow(t, c.flow)); got != c.pass {
					t.Errorf("%s: passes=%v, want %v\n%s", c.flow, got, c.pass, fake.Dump())
				}
			}
		})
	}
}

func TestRangeExpr(t *testing.T) {
	for lo, want := range map[string]string{
		"10.0.0.0-10.0.255.255": "10.0.0.0/16", "10.2.0.0-10.255.255.255": "10.2.0.0-10.255.255.255",
		"10.0.0.5-10.0.0.5": "10.0.0.5", "0.0.0.0-255.255.255.255": "0.0.0.0/0", "10.0.0.1-10.0.0.2": "10.0.0.1-10.0.0.2",
	} {
		a, b, _ := strings.Cut(lo, "-")
		if got := rangeExpr(addrRange{netip.MustParseAddr(a), netip.MustParseAddr(b)}); got != want {
			t.Errorf("%s: %s, want %s", lo, got, want)
		}
	}
}

func TestBlockRanges(t *testing.T) {
	for _, tc := range []struct {
		blocks []*networkingv1.IPBlock
		want   string
	}{
		{[]*networkingv1.IPBlock{{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}, "10.0.0.0-10.0.255.255 10.2.0.0-10.255.255.255"},
		{[]*networkingv1.IPBlock{{CIDR: "10.0.0.0/30", Except: []string{"10.0.0.0/32", "10.0.0.3/32"}}}, "10.0.0.1-10.0.0.2"},
		{[]*networkingv1.IPBlock{{CIDR: "10.0.0.0/24", Except: []string{"10.0.0.5/32"}}, {CIDR: "10.0.0.5/32"}}, "10.0.0.0-10.0.0.255"},
		{[]*networkingv1.IPBlock{{CIDR: "10.0.0.7/24"}, {CIDR: "10.0.1.0/24"}, {CIDR: "fd00::/64"}}, "10.0.0.0-10.0.1.255"},
		{[]*networkingv1.IPBlock{{CIDR: "0.0.0.0/0", Except: []string{"0.0.0.0/32"}}}, "0.0.0.1-255.255.255.255"},
	} {
		var got []string
		for _, r := range blockRanges(tc.blocks, ipv4) {
			got = append(got, r.lo.String()+"-"+r.hi.String())
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%v: got %v, want %s", tc.blocks, got, tc.want)
		}
	}
}

// operations lists a transaction's operations' verbs and objects, one a
// line ("add element", "flush chain"…).
func operations(tx *knftables.Transaction) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(tx.String()), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			out = append(out, f[0]+" "+f[1])
		}
	}
	return out
}

// TestIncrementalChanges checks the shape of the transactions: a new pod
// a policy selects, or a new peer, is elements only; a changed policy
// rewrites its own chain; a deleted one leaves the bare table; the number
// of chains does not grow with pods.
func TestIncrementalChanges(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, DefaultTable)
	st := newTableState(ipv4)
	s := makeState(testPods...)
	allow := policy("x", "allow", map[string]string{"pod": "a"}, nil,
		[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{podPeer(map[string]string{"app": "client"})},
			Ports: []networkingv1.NetworkPolicyPort{port(tcp, intstr.FromInt32(8080)), port(tcp, intstr.FromString("serve-80"))}}}, nil)
	run := func(full bool, updates map[string]*compiled) (*knftables.Transaction, bool) {
		t.Helper()
		tx := fake.NewTransaction()
		narrowed := true
		if full {
			st.full(tx, updates)
		} else {
			narrowed = st.apply(tx, updates)
		}
		if err := fake.Run(t.Context(), tx); err != nil {
			t.Fatalf("%v\n%s", err, tx)
		}
		return tx, narrowed
	}
	run(true, nil)
	bare := fake.Dump()
	run(false, map[string]*compiled{"x/allow": compile(allow, s, ipv4)})
	chains, _ := fake.List(t.Context(), "chain")
	if len(chains) != 5 { // 3 base chains, x's ingress chain, the policy's
		t.Errorf("chains: %v", chains)
	}

	// Another selected pod with the named port, and another client: elements only.
	s.Pods["x"] = append(s.Pods["x"],
		makePod(podSpec{ns: "x", name: "a2", ip: "10.1.0.9", node: thisNode, labels: map[string]string{"pod": "a"},
			ports: []corev1.ContainerPort{{Name: "serve-80", ContainerPort: 8081}}}),
		makePod(podSpec{ns: "x", name: "client2", ip: "10.1.0.10", node: "n2", labels: map[string]string{"app": "client"}}))
	tx, narrowed := run(false, map[string]*compiled{"x/allow": compile(allow, s, ipv4)})
	want := []string{"add element", "add element", "add element", "add element"} // sel, pods, named, ingress-pods
	if got := operations(tx); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("a new selected pod and peer: %v, want %v\n%s", got, want, tx)
	}
	if !narrowed {
		t.Error("a newly selected pod did not count as narrowing (its connections need checking)")
	}
	chains, _ = fake.List(t.Context(), "chain")
	if len(chains) != 5 {
		t.Errorf("chains after more pods: %v", chains)
	}
	// Only a new peer: widening, no conntrack sweep needed.
	s.Pods["x"] = append(s.Pods["x"], makePod(podSpec{ns: "x", name: "client3", ip: "10.1.0.11", node: "n2", labels: map[string]string{"app": "client"}}))
	if tx, narrowed := run(false, map[string]*compiled{"x/allow": compile(allow, s, ipv4)}); narrowed || tx.NumOperations() != 1 {
		t.Errorf("a new peer: narrowed=%v\n%s", narrowed, tx)
	}

	// A changed policy rewrites its chain.
	allow.Spec.Ingress[0].Ports = allow.Spec.Ingress[0].Ports[:1]
	tx, _ = run(false, map[string]*compiled{"x/allow": compile(allow, s, ipv4)})
	if got := strings.Join(operations(tx), ","); !strings.Contains(got, "flush chain") || strings.Contains(got, "add chain") {
		t.Errorf("a changed policy: %v\n%s", got, tx)
	}

	// Deleted: back to the bare table.
	run(false, map[string]*compiled{"x/allow": nil})
	if got := fake.Dump(); got != bare {
		t.Errorf("after the policy's deletion:\n%s\nwant\n%s", got, bare)
	}
}
