package endpointslice

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"plainkube.dev/plainkube/internal/controller/endpointutil"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func testService(mut ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "svc-uid", Labels: map[string]string{"app": "web"}},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			ClusterIP:  "10.96.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, m := range mut {
		m(svc)
	}
	return svc
}

type podOpt func(*corev1.Pod)

func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
}

func terminating(p *corev1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}

func withIP(ip string) podOpt {
	return func(p *corev1.Pod) {
		p.Status.PodIP = ip
		p.Status.PodIPs = nil
		for _, s := range strings.Split(ip, ",") {
			if s != "" {
				p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: s})
			}
		}
		p.Status.PodIP, _, _ = strings.Cut(ip, ",")
	}
}

func namedPort(name string, port int32) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP})
	}
}

func testPod(name, ip string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	withIP(ip)(p)
	for _, o := range opts {
		o(p)
	}
	return p
}

func allNodes(name string) (string, bool) {
	if name == "node-a" {
		return "zone-1", true
	}
	return "", name == "node-b"
}

// existingFrom turns planned creations into stored slices with names.
func existingFrom(created []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for i, s := range created {
		s = s.DeepCopy()
		s.Name = fmt.Sprintf("%s%d", s.GenerateName, i)
		s.UID = types.UID("slice-" + s.Name)
		s.Generation = 1
		out = append(out, s)
	}
	return out
}

// summary renders slices as "ports: ip(r s t) ip(...)", sorted, for
// comparison.
func summary(ss []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range ss {
		var ports []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s=%d", *p.Name, *p.Port))
		}
		var eps []string
		for _, e := range s.Endpoints {
			flag := func(b *bool, c string) string {
				if b != nil && *b {
					return c
				}
				return "-"
			}
			eps = append(eps, fmt.Sprintf("%s(%s%s%s)", strings.Join(e.Addresses, "+"),
				flag(e.Conditions.Ready, "r"), flag(e.Conditions.Serving, "s"), flag(e.Conditions.Terminating, "t")))
		}
		out = append(out, fmt.Sprintf("%s [%s] %s", s.AddressType, strings.Join(ports, ","), strings.Join(eps, " ")))
	}
	slices.Sort(out)
	return out
}

func TestPlanFromNothing(t *testing.T) {
	tests := []struct {
		name        string
		svc         *corev1.Service
		pods        []*corev1.Pod
		max         int
		wantCreate  []string
		wantMissing []string
	}{
		{
			name:       "no pods: a placeholder",
			svc:        testService(),
			wantCreate: []string{"IPv4 [] "},
		},
		{
			name: "conditions and exclusions",
			svc:  testService(),
			pods: []*corev1.Pod{
				testPod("a", "10.0.0.1", ready),
				testPod("b", "10.0.0.2"),
				testPod("c", "10.0.0.3", ready, terminating),
				testPod("no-ip", ""),
				testPod("done", "10.0.0.5", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				testPod("other", "10.0.0.6", func(p *corev1.Pod) { p.Labels = nil }), // the lister filters; kept to show it is not re-checked
			},
			wantCreate: []string{"IPv4 [http=8080] 10.0.0.1(rs-) 10.0.0.2(---) 10.0.0.3(-st) 10.0.0.6(---)"},
		},
		{
			name:       "publishNotReadyAddresses makes every endpoint ready",
			svc:        testService(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			pods:       []*corev1.Pod{testPod("a", "10.0.0.1"), testPod("b", "10.0.0.2", terminating)},
			wantCreate: []string{"IPv4 [http=8080] 10.0.0.1(r--) 10.0.0.2(r-t)"},
		},
		{
			name: "named target port resolved per pod",
			svc: testService(func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "http", Port: 80, TargetPort: intstr.FromString("web"), Protocol: corev1.ProtocolTCP},
					{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
				}
			}),
			pods: []*corev1.Pod{
				testPod("a", "10.0.0.1", ready, namedPort("web", 8080)),
				testPod("b", "10.0.0.2", ready, namedPort("web", 8081)),
				testPod("c", "10.0.0.3", ready, namedPort("web", 8080)),
				testPod("d", "10.0.0.4", ready),
			},
			wantCreate: []string{
				"IPv4 [http=8080,metrics=9090] 10.0.0.1(rs-) 10.0.0.3(rs-)",
				"IPv4 [http=8081,metrics=9090] 10.0.0.2(rs-)",
				"IPv4 [metrics=9090] 10.0.0.4(rs-)",
			},
		},
		{
			name:        "pods on unknown nodes are left out",
			svc:         testService(),
			pods:        []*corev1.Pod{testPod("a", "10.0.0.1", ready), testPod("b", "10.0.0.2", ready, func(p *corev1.Pod) { p.Spec.NodeName = "gone" })},
			wantCreate:  []string{"IPv4 [http=8080] 10.0.0.1(rs-)"},
			wantMissing: []string{"gone"},
		},
		{
			name: "dual stack: a slice per family",
			svc: testService(func(s *corev1.Service) {
				s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
			}),
			pods: []*corev1.Pod{testPod("a", "10.0.0.1,fd00::1", ready)},
			wantCreate: []string{
				"IPv4 [http=8080] 10.0.0.1(rs-)",
				"IPv6 [http=8080] fd00::1(rs-)",
			},
		},
		{
			name: "at most max endpoints per slice",
			svc:  testService(),
			max:  2,
			pods: []*corev1.Pod{
				testPod("a", "10.0.0.1", ready), testPod("b", "10.0.0.2", ready),
				testPod("c", "10.0.0.3", ready), testPod("d", "10.0.0.4", ready), testPod("e", "10.0.0.5", ready),
			},
			wantCreate: []string{
				"IPv4 [http=8080] 10.0.0.1(rs-) 10.0.0.2(rs-)",
				"IPv4 [http=8080] 10.0.0.3(rs-) 10.0.0.4(rs-)",
				"IPv4 [http=8080] 10.0.0.5(rs-)",
			},
		},
		{
			name:       "headless service without ports",
			svc:        testService(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone; s.Spec.Ports = nil }),
			pods:       []*corev1.Pod{testPod("a", "10.0.0.1", ready)},
			wantCreate: []string{"IPv4 [] 10.0.0.1(rs-)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan(State{Service: tt.svc, Pods: tt.pods, Nodes: allNodes, MaxPerSlice: tt.max})
			missing := p.MissingNodes
			if len(p.Update) != 0 || len(p.Delete) != 0 {
				t.Errorf("update %d delete %d, want none", len(p.Update), len(p.Delete))
			}
			if got := summary(p.Create); !slices.Equal(got, tt.wantCreate) {
				t.Errorf("create:\n got %q\nwant %q", got, tt.wantCreate)
			}
			if !slices.Equal(missing, tt.wantMissing) {
				t.Errorf("missing nodes %v, want %v", missing, tt.wantMissing)
			}
			for _, s := range p.Create {
				if s.GenerateName != "web-" || s.Labels[discoveryv1.LabelServiceName] != "web" ||
					s.Labels[discoveryv1.LabelManagedBy] != ControllerName || s.Labels["app"] != "web" ||
					len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "svc-uid" || !*s.OwnerReferences[0].Controller {
					t.Errorf("slice metadata %+v", s.ObjectMeta)
				}
				if _, headless := s.Labels[corev1.IsHeadlessService]; headless != !endpointutil.IsServiceIPSet(tt.svc) {
					t.Errorf("headless label %v on %+v", headless, s.Labels)
				}
			}
		})
	}
}

func TestPlanEndpointDetails(t *testing.T) {
	svc := testService()
	pod := testPod("a", "10.0.0.1", ready, func(p *corev1.Pod) { p.Spec.Hostname = "h"; p.Spec.Subdomain = "web" })
	p := plan(State{Service: svc, Pods: []*corev1.Pod{pod}, Nodes: allNodes})
	ep := p.Create[0].Endpoints[0]
	if *ep.NodeName != "node-a" || *ep.Zone != "zone-1" || *ep.Hostname != "h" {
		t.Errorf("endpoint %+v", ep)
	}
	if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.Name != "a" || ep.TargetRef.Namespace != "ns" || ep.TargetRef.UID != "uid-a" {
		t.Errorf("targetRef %+v", ep.TargetRef)
	}
	pod.Spec.NodeName = "node-b" // no zone label
	p = plan(State{Service: svc, Pods: []*corev1.Pod{pod}, Nodes: allNodes})
	if ep := p.Create[0].Endpoints[0]; ep.Zone != nil {
		t.Errorf("zone %q for a node without one", *ep.Zone)
	}
}

func TestPlanAgainstExisting(t *testing.T) {
	svc := testService()
	a, b, c := testPod("a", "10.0.0.1", ready), testPod("b", "10.0.0.2", ready), testPod("c", "10.0.0.3", ready)
	first := plan(State{Service: svc, Pods: []*corev1.Pod{a, b}, Nodes: allNodes})
	existing := existingFrom(first.Create)

	t.Run("nothing changed: nothing to do", func(t *testing.T) {
		p := plan(State{Service: svc, Pods: []*corev1.Pod{a, b}, Nodes: allNodes, Existing: existing})
		if !p.Empty() {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("readiness change updates in place", func(t *testing.T) {
		notReady := b.DeepCopy()
		notReady.Status.Conditions[0].Status = corev1.ConditionFalse
		p := plan(State{Service: svc, Pods: []*corev1.Pod{a, notReady}, Nodes: allNodes, Existing: existing})
		if len(p.Create) != 0 || len(p.Delete) != 0 || len(p.Update) != 1 || p.Update[0].Name != existing[0].Name {
			t.Fatalf("plan %+v", p)
		}
		if got := summary(p.Update); got[0] != "IPv4 [http=8080] 10.0.0.1(rs-) 10.0.0.2(---)" {
			t.Errorf("update %q", got)
		}
	})
	t.Run("a new pod fills the unchanged slice", func(t *testing.T) {
		p := plan(State{Service: svc, Pods: []*corev1.Pod{a, b, c}, Nodes: allNodes, Existing: existing})
		if len(p.Create) != 0 || len(p.Delete) != 0 || len(p.Update) != 1 {
			t.Fatalf("plan %+v", p)
		}
		if got := summary(p.Update); got[0] != "IPv4 [http=8080] 10.0.0.1(rs-) 10.0.0.2(rs-) 10.0.0.3(rs-)" {
			t.Errorf("update %q", got)
		}
	})
	t.Run("a removed pod shrinks the slice", func(t *testing.T) {
		p := plan(State{Service: svc, Pods: []*corev1.Pod{b}, Nodes: allNodes, Existing: existing})
		if got := summary(p.Update); len(p.Create)+len(p.Delete) != 0 || len(got) != 1 || got[0] != "IPv4 [http=8080] 10.0.0.2(rs-)" {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("no pods left: the slice becomes the placeholder", func(t *testing.T) {
		p := plan(State{Service: svc, Pods: nil, Nodes: allNodes, Existing: existing})
		if len(p.Create)+len(p.Delete) != 0 || len(p.Update) != 1 || p.Update[0].Name != existing[0].Name {
			t.Fatalf("plan %+v", p)
		}
		if got := summary(p.Update); got[0] != "IPv4 [] " {
			t.Errorf("update %q", got)
		}
		// and the placeholder is then left alone
		placeholder := existingFrom(p.Update)
		placeholder[0].Name = existing[0].Name
		if p := plan(State{Service: svc, Pods: nil, Nodes: allNodes, Existing: placeholder}); !p.Empty() {
			t.Errorf("placeholder churn: %+v", p)
		}
	})
	t.Run("service labels are copied", func(t *testing.T) {
		relabeled := testService(func(s *corev1.Service) { s.Labels = map[string]string{"app": "web", "tier": "front"} })
		p := plan(State{Service: relabeled, Pods: []*corev1.Pod{a, b}, Nodes: allNodes, Existing: existing})
		if len(p.Update) != 1 || p.Update[0].Labels["tier"] != "front" || p.Update[0].Labels[discoveryv1.LabelManagedBy] != ControllerName {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("port change replaces the slice by reusing it", func(t *testing.T) {
		moved := testService(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(9000) })
		p := plan(State{Service: moved, Pods: []*corev1.Pod{a, b}, Nodes: allNodes, Existing: existing})
		if len(p.Create)+len(p.Delete) != 0 || len(p.Update) != 1 || p.Update[0].Name != existing[0].Name {
			t.Fatalf("plan %+v", p)
		}
		if got := summary(p.Update); got[0] != "IPv4 [http=9000] 10.0.0.1(rs-) 10.0.0.2(rs-)" {
			t.Errorf("update %q", got)
		}
	})
	t.Run("slices of an older service of that name are deleted", func(t *testing.T) {
		recreated := testService(func(s *corev1.Service) { s.UID = "new-uid" })
		p := plan(State{Service: recreated, Pods: []*corev1.Pod{a, b}, Nodes: allNodes, Existing: existing})
		if len(p.Create) != 1 || len(p.Update) != 0 || len(p.Delete) != 1 || p.Delete[0].Name != existing[0].Name {
			t.Fatalf("plan %+v", p)
		}
		if p.Create[0].OwnerReferences[0].UID != "new-uid" {
			t.Errorf("owner %+v", p.Create[0].OwnerReferences)
		}
	})
	t.Run("slices of an address type the service lost are deleted", func(t *testing.T) {
		v6 := existingFrom(first.Create)
		v6[0].Name, v6[0].AddressType = "web-v6", discoveryv1.AddressTypeIPv6
		p := plan(State{Service: svc, Pods: []*corev1.Pod{a, b}, Nodes: allNodes, Existing: append(slices.Clone(existing), v6...)})
		if len(p.Create)+len(p.Update) != 0 || len(p.Delete) != 1 || p.Delete[0].Name != "web-v6" {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("endpoint duplicated across slices is kept once", func(t *testing.T) {
		dup := existingFrom(first.Create)
		dup[0].Name = "web-dup"
		p := plan(State{Service: svc, Pods: []*corev1.Pod{a, b}, Nodes: allNodes, Existing: append(slices.Clone(existing), dup...)})
		if len(p.Create)+len(p.Update) != 0 || len(p.Delete) != 1 || p.Delete[0].Name != "web-dup" {
			t.Errorf("plan %+v", p)
		}
	})
}

func TestFindPort(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
		}}},
		InitContainers: []corev1.Container{
			{Ports: []corev1.ContainerPort{{Name: "init-only", ContainerPort: 1}}},
			{RestartPolicy: &always, Ports: []corev1.ContainerPort{{Name: "sidecar", ContainerPort: 15000}}},
		},
	}}
	tests := []struct {
		port    corev1.ServicePort
		want    int32
		wantErr bool
	}{
		{corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(9376)}, 9376, false},
		{corev1.ServicePort{Port: 80}, 80, false},
		{corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}, 8080, false},
		{corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolUDP}, 0, true},
		{corev1.ServicePort{Port: 53, TargetPort: intstr.FromString("dns"), Protocol: corev1.ProtocolUDP}, 5353, false},
		{corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("sidecar")}, 15000, false},
		{corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("init-only")}, 0, true},
		{corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("missing")}, 0, true},
	}
	for _, tt := range tests {
		got, err := endpointutil.FindPort(pod, &tt.port)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("endpointutil.FindPort(%v) = %d, %v; want %d, err %v", tt.port.TargetPort, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestTriggerTimeTracker(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := testService(func(s *corev1.Service) { s.CreationTimestamp = metav1.NewTime(t0) })
	readyAt := func(name string, at time.Time) *corev1.Pod {
		return testPod(name, "10.0.0.1", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
		})
	}
	tr := endpointutil.NewTriggerTimeTracker()
	steps := []struct {
		pods []*corev1.Pod
		want time.Time
	}{
		{[]*corev1.Pod{readyAt("a", t0.Add(time.Second))}, t0},                                                             // first sight: service creation
		{[]*corev1.Pod{readyAt("a", t0.Add(time.Second))}, time.Time{}},                                                    // nothing changed
		{[]*corev1.Pod{readyAt("a", t0.Add(5*time.Second)), readyAt("b", t0.Add(3*time.Second))}, t0.Add(3 * time.Second)}, // earliest change
		{[]*corev1.Pod{readyAt("a", t0.Add(5*time.Second))}, time.Time{}},                                                  // a pod went away
	}
	for i, s := range steps {
		if got := tr.Compute(svc, s.pods); !got.Equal(s.want) {
			t.Errorf("step %d: %v, want %v", i, got, s.want)
		}
	}
	tr.Forget("ns", "web")
	if got := tr.Compute(svc, nil); !got.Equal(t0) {
		t.Errorf("after Forget: %v", got)
	}
}
