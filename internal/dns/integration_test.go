package dns

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/pkg/testenv"
)

// TestIntegration runs the server against a real API server: Services and
// EndpointSlices made through client-go are answered over UDP, and
// Advertise keeps (and at the end removes) the node's kube-dns slice.
func TestIntegration(t *testing.T) {
	env := testenv.Start(t)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	up := startUpstream(t, internet)

	web, err := cs.CoreV1().Services("default").Create(ctx, newService("default", "web", nil, svcPort{"http", corev1.ProtocolTCP, 80}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, newService("default", "db", []string{"None"}, svcPort{"mysql", corev1.ProtocolTCP, 3306}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mysql := svcPort{"mysql", corev1.ProtocolTCP, 3306}
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx,
		newSlice("default", "db-1", "db", []ep{{"10.1.0.1", "db-0", yes}, {"10.1.0.2", "", no}}, mysql), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeDNS, err := cs.CoreV1().Services("kube-system").Get(ctx, ServiceName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		kubeDNS, err = cs.CoreV1().Services("kube-system").Create(ctx, newService("kube-system", ServiceName, nil,
			svcPort{"dns", corev1.ProtocolUDP, 53}, svcPort{"dns-tcp", corev1.ProtocolTCP, 53}), metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}

	factory := informers.NewSharedInformerFactory(cs, 0)
	s, err := New(factory, Options{Listen: "127.0.0.1:0", Upstreams: []string{up.addr}})
	if err != nil {
		t.Fatal(err)
	}
	// The address the node would serve on, named in the NS records.
	const nodeIP = "192.0.2.10"
	s.localIPs = []netip.Addr{netip.MustParseAddr(nodeIP)}
	factory.Start(ctx.Done())
	defer factory.Shutdown() // after cancel, which stops the informers
	defer cancel()
	addr := runServer(t, s)
	select {
	case <-s.Ready():
	case <-ctx.Done():
		t.Fatal("not ready")
	}

	// answers asks over UDP until the answer's record data is want.
	answers := func(name string, qtype uint16, want ...string) {
		t.Helper()
		var got []string
		for {
			got = nil
			for _, rr := range exchange(t, "udp", addr, query(name, qtype)).Answer {
				got = append(got, rr.(interface{ String() string }).String()[len(rr.Header().String()):])
			}
			slices.Sort(got)
			if slices.Equal(got, want) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s %s: %q, want %q", name, mdns.TypeToString[qtype], got, want)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	answers("web.default.svc.cluster.local.", mdns.TypeA, web.Spec.ClusterIP)
	answers("db.default.svc.cluster.local.", mdns.TypeA, "10.1.0.1")
	answers("db-0.db.default.svc.cluster.local.", mdns.TypeA, "10.1.0.1")
	answers("_mysql._tcp.db.default.svc.cluster.local.", mdns.TypeSRV, "0 100 3306 db-0.db.default.svc.cluster.local.")
	answers(reverseName(web.Spec.ClusterIP), mdns.TypePTR, "web.default.svc.cluster.local.")
	answers("example.com.", mdns.TypeA, "192.0.2.80")

	// Changes arrive through the watch.
	if _, err := cs.CoreV1().Services("default").Create(ctx, externalService("default", "ext", "example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	answers("ext.default.svc.cluster.local.", mdns.TypeCNAME, "example.com.")
	if err := cs.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	answers("web.default.svc.cluster.local.", mdns.TypeA)
	if m := exchange(t, "udp", addr, query("web.default.svc.cluster.local.", mdns.TypeA)); m.Rcode != mdns.RcodeNameError {
		t.Errorf("deleted Service: %s", mdns.RcodeToString[m.Rcode])
	}

	// Advertise keeps the node's slice, asserting it again when changed
	// or deleted, and deletes it when its context ends.
	old := advertiseInterval
	advertiseInterval = 50 * time.Millisecond
	defer func() { advertiseInterval = old }()
	actx, acancel := context.WithCancel(ctx)
	advertised := make(chan error, 1)
	go func() { advertised <- Advertise(actx, cs, "node-1", nodeIP, 53, nil) }()
	slicesAPI := cs.DiscoveryV1().EndpointSlices("kube-system")
	get := func(check func(*discoveryv1.EndpointSlice) bool) *discoveryv1.EndpointSlice {
		t.Helper()
		for {
			es, err := slicesAPI.Get(ctx, "kube-dns-node-1", metav1.GetOptions{})
			if err == nil && check(es) {
				return es
			}
			select {
			case <-ctx.Done():
				t.Fatalf("slice %v, %v", es, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	es := get(func(*discoveryv1.EndpointSlice) bool { return true })
	if es.Labels[discoveryv1.LabelServiceName] != ServiceName || es.Labels[discoveryv1.LabelManagedBy] != ManagedBy ||
		es.AddressType != discoveryv1.AddressTypeIPv4 || len(es.Endpoints) != 1 || len(es.Ports) != 2 {
		t.Fatalf("slice %+v", es)
	}
	e := es.Endpoints[0]
	if !slices.Equal(e.Addresses, []string{nodeIP}) || e.NodeName == nil || *e.NodeName != "node-1" || e.Conditions.Ready == nil || !*e.Conditions.Ready ||
		e.Hints == nil || len(e.Hints.ForNodes) != 1 || e.Hints.ForNodes[0].Name != "node-1" {
		t.Errorf("endpoint %+v", e)
	}
	for i, want := range []struct {
		name  string
		proto corev1.Protocol
	}{{"dns", corev1.ProtocolUDP}, {"dns-tcp", corev1.ProtocolTCP}} {
		if p := es.Ports[i]; *p.Name != want.name || *p.Protocol != want.proto || *p.Port != 53 {
			t.Errorf("port %d: %s/%s/%d", i, *p.Name, *p.Protocol, *p.Port)
		}
	}
	// The server finds itself behind kube-dns.
	answers("cluster.local.", mdns.TypeNS, "kube-dns.kube-system.svc.cluster.local.")
	answers("ns.dns.cluster.local.", mdns.TypeA, kubeDNS.Spec.ClusterIP)
	answers(reverseName(nodeIP), mdns.TypePTR, "192-0-2-10.kube-dns.kube-system.svc.cluster.local.")

	es.Ports = es.Ports[:1]
	if _, err := slicesAPI.Update(ctx, es, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	get(func(es *discoveryv1.EndpointSlice) bool { return len(es.Ports) == 2 })
	if err := slicesAPI.Delete(ctx, "kube-dns-node-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	get(func(*discoveryv1.EndpointSlice) bool { return true })

	acancel()
	if err := <-advertised; err != nil {
		t.Errorf("Advertise: %v", err)
	}
	if _, err := slicesAPI.Get(ctx, "kube-dns-node-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("slice after Advertise ended: %v", err)
	}
	answers(reverseName(nodeIP), mdns.TypePTR)
}

func TestAdvertisedSlice(t *testing.T) {
	es, err := advertisedSlice("n", "fd00::53", 5353)
	if err != nil || es.AddressType != discoveryv1.AddressTypeIPv6 || es.Endpoints[0].Addresses[0] != "fd00::53" || *es.Ports[0].Port != 5353 || es.Name != "kube-dns-n" {
		t.Errorf("IPv6: %+v, %v", es, err)
	}
	if es, err := advertisedSlice("n", "::ffff:192.0.2.1", 53); err != nil || es.AddressType != discoveryv1.AddressTypeIPv4 || es.Endpoints[0].Addresses[0] != "192.0.2.1" {
		t.Errorf("mapped IPv4: %+v, %v", es, err)
	}
	for _, ip := range []string{"", "node", "fe80::1%eth0"} {
		if _, err := advertisedSlice("n", ip, 53); err == nil {
			t.Errorf("%q accepted", ip)
		}
	}
	if err := Advertise(context.Background(), nil, "n", "bad", 53, nil); err == nil {
		t.Errorf("Advertise accepted a bad address")
	}
}
