package endpoints

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"plainkube.dev/plainkube/internal/controller/endpointutil"
)

func testService(mut ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Labels: map[string]string{"app": "web"}},
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

func testPod(name, ip string, isReady bool, opts ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if isReady {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	if ip != "" {
		for _, s := range strings.Split(ip, ",") {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: s})
		}
		p.Status.PodIP, _, _ = strings.Cut(ip, ",")
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func terminating(p *corev1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}

func namedPort(name string, port int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP})
	}
}

// render shows subsets as "ready ips | not-ready ips | ports".
func render(subsets []corev1.EndpointSubset) []string {
	var out []string
	for _, s := range subsets {
		var r, nr, p []string
		for _, a := range s.Addresses {
			r = append(r, a.IP)
		}
		for _, a := range s.NotReadyAddresses {
			nr = append(nr, a.IP)
		}
		for _, port := range s.Ports {
			p = append(p, fmt.Sprintf("%s=%d", port.Name, port.Port))
		}
		out = append(out, strings.Join(r, ",")+" | "+strings.Join(nr, ",")+" | "+strings.Join(p, ","))
	}
	return out
}

func TestSubsets(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want []string
	}{
		{"no pods", testService(), nil, nil},
		{
			name: "ready and not ready",
			svc:  testService(),
			pods: []*corev1.Pod{
				testPod("b", "10.0.0.2", false),
				testPod("a", "10.0.0.1", true),
				testPod("c", "10.0.0.3", true, terminating),
				testPod("noip", "", true),
				testPod("done", "10.0.0.9", true, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
			},
			want: []string{"10.0.0.1 | 10.0.0.2 | http=8080"},
		},
		{
			name: "publishNotReadyAddresses: everything ready, terminating too",
			svc:  testService(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			pods: []*corev1.Pod{testPod("a", "10.0.0.1", false), testPod("c", "10.0.0.3", true, terminating)},
			want: []string{"10.0.0.1,10.0.0.3 |  | http=8080"},
		},
		{
			name: "named ports group pods by what they resolve to",
			svc: testService(func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "http", Port: 80, TargetPort: intstr.FromString("web"), Protocol: corev1.ProtocolTCP},
					{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
				}
			}),
			pods: []*corev1.Pod{
				testPod("a", "10.0.0.1", true, namedPort("web", 8080)),
				testPod("b", "10.0.0.2", true, namedPort("web", 8081)),
				testPod("c", "10.0.0.3", false, namedPort("web", 8080)),
				testPod("d", "10.0.0.4", true),
			},
			want: []string{
				"10.0.0.1 | 10.0.0.3 | http=8080",
				"10.0.0.1,10.0.0.2,10.0.0.4 | 10.0.0.3 | metrics=9090",
				"10.0.0.2 |  | http=8081",
			},
		},
		{
			name: "headless without ports",
			svc:  testService(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone; s.Spec.Ports = nil }),
			pods: []*corev1.Pod{testPod("a", "10.0.0.1", true), testPod("b", "10.0.0.2", false)},
			want: []string{"10.0.0.1 | 10.0.0.2 | "},
		},
		{
			name: "the service's family picks the pod IP",
			svc:  testService(func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} }),
			pods: []*corev1.Pod{testPod("a", "10.0.0.1,fd00::1", true), testPod("v4only", "10.0.0.2", true)},
			want: []string{"fd00::1 |  | http=8080"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(Subsets(tt.svc, tt.pods))
			slices.Sort(got)
			slices.Sort(tt.want)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSubsetsAddressDetails(t *testing.T) {
	pod := testPod("a", "10.0.0.1", true, func(p *corev1.Pod) { p.Spec.Hostname = "h"; p.Spec.Subdomain = "web" })
	s := Subsets(testService(), []*corev1.Pod{pod})
	a := s[0].Addresses[0]
	if a.Hostname != "h" || a.NodeName == nil || *a.NodeName != "node-a" || a.TargetRef == nil ||
		a.TargetRef.Kind != "Pod" || a.TargetRef.Name != "a" || a.TargetRef.Namespace != "ns" || a.TargetRef.UID != "uid-a" {
		t.Errorf("address %+v targetRef %+v", a, a.TargetRef)
	}
}

func TestRepack(t *testing.T) {
	ref := func(uid string) *corev1.ObjectReference { return &corev1.ObjectReference{UID: types.UID(uid)} }
	p80 := corev1.EndpointPort{Name: "a", Port: 80}
	p90 := corev1.EndpointPort{Name: "b", Port: 90}
	in := []corev1.EndpointSubset{
		{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.2", TargetRef: ref("2")}}, Ports: []corev1.EndpointPort{p80}},
		{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1", TargetRef: ref("1")}}, Ports: []corev1.EndpointPort{p90, p80}},
		{NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.1", TargetRef: ref("1")}}, Ports: []corev1.EndpointPort{p90}}, // ready wins
		{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.2", TargetRef: ref("2")}}, Ports: []corev1.EndpointPort{p80}},         // duplicate
		{NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.3", TargetRef: ref("3")}}, Ports: []corev1.EndpointPort{p90}},
	}
	want := []string{
		"10.0.0.1 | 10.0.0.3 | b=90",
		"10.0.0.1,10.0.0.2 |  | a=80",
	}
	got := render(endpointutil.Repack(in))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// The same endpoints in another order pack the same.
	slices.Reverse(in)
	if again := render(endpointutil.Repack(in)); !slices.Equal(again, render(endpointutil.Repack(slices.Clone(in)))) {
		t.Error("repack is not deterministic")
	}
}

func TestTruncate(t *testing.T) {
	addrs := func(prefix string, n int) []corev1.EndpointAddress {
		var out []corev1.EndpointAddress
		for i := range n {
			out = append(out, corev1.EndpointAddress{IP: fmt.Sprintf("%s.%d.%d", prefix, i/250, i%250)})
		}
		return out
	}
	count := func(s []corev1.EndpointSubset) (r, nr []int) {
		for _, x := range s {
			r = append(r, len(x.Addresses))
			nr = append(nr, len(x.NotReadyAddresses))
		}
		return
	}
	tests := []struct {
		name          string
		in            []corev1.EndpointSubset
		wantTruncated bool
		wantReady     []int
		wantNotReady  []int
	}{
		{"under capacity", []corev1.EndpointSubset{{Addresses: addrs("10", 600), NotReadyAddresses: addrs("11", 400)}}, false, []int{600}, []int{400}},
		{"not-ready addresses go first", []corev1.EndpointSubset{
			{Addresses: addrs("10", 600), NotReadyAddresses: addrs("11", 300)},
			{Addresses: addrs("12", 200), NotReadyAddresses: addrs("13", 100)},
		}, true, []int{600, 200}, []int{150, 50}},
		{"too many ready: not-ready dropped, ready shared", []corev1.EndpointSubset{
			{Addresses: addrs("10", 900), NotReadyAddresses: addrs("11", 10)},
			{Addresses: addrs("12", 600)},
		}, true, []int{600, 400}, []int{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Truncate(tt.in)
			r, nr := count(tt.in)
			if got != tt.wantTruncated || !slices.Equal(r, tt.wantReady) || !slices.Equal(nr, tt.wantNotReady) {
				t.Errorf("truncated %v ready %v notReady %v; want %v %v %v", got, r, nr, tt.wantTruncated, tt.wantReady, tt.wantNotReady)
			}
		})
	}
}

func TestDesired(t *testing.T) {
	svc := testService()
	pods := []*corev1.Pod{testPod("a", "10.0.0.1", true)}
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)

	created, write := Desired(svc, pods, nil, at)
	if !write || created.Name != "web" || created.Namespace != "ns" || created.Labels["app"] != "web" ||
		created.Annotations[corev1.EndpointsLastChangeTriggerTime] != "2025-01-02T03:04:05.000000006Z" {
		t.Fatalf("create: write %v %+v", write, created.ObjectMeta)
	}
	if _, headless := created.Labels[corev1.IsHeadlessService]; headless {
		t.Error("headless label on a service with a cluster IP")
	}

	stored := created.DeepCopy()
	stored.ResourceVersion = "5"
	stored.Subsets[0].Addresses[0].TargetRef.ResourceVersion = "77" // ignored
	if _, write := Desired(svc, pods, stored, time.Time{}); write {
		t.Error("unchanged endpoints written again")
	}

	pods = append(pods, testPod("b", "10.0.0.2", false))
	updated, write := Desired(svc, pods, stored, time.Time{})
	if !write || updated.ResourceVersion != "5" || len(updated.Subsets[0].NotReadyAddresses) != 1 {
		t.Fatalf("update: write %v %+v", write, updated)
	}
	if _, ok := updated.Annotations[corev1.EndpointsLastChangeTriggerTime]; ok {
		t.Error("zero trigger time kept the annotation")
	}

	headless := testService(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })
	if got, write := Desired(headless, pods, stored, time.Time{}); !write || got.Labels[corev1.IsHeadlessService] != "" {
		t.Errorf("headless: write %v labels %v", write, got.Labels)
	} else if _, ok := got.Labels[corev1.IsHeadlessService]; !ok {
		t.Errorf("headless label missing: %v", got.Labels)
	}

	var many []*corev1.Pod
	for i := range MaxCapacity + 5 {
		many = append(many, testPod(fmt.Sprintf("p%d", i), fmt.Sprintf("10.1.%d.%d", i/250, i%250), true))
	}
	full, _ := Desired(svc, many, nil, time.Time{})
	if n := len(full.Subsets[0].Addresses); n != MaxCapacity || full.Annotations[corev1.EndpointsOverCapacity] != "truncated" {
		t.Errorf("over capacity: %d addresses, annotations %v", n, full.Annotations)
	}
	full.ResourceVersion = "9"
	if _, write := Desired(svc, many, full, time.Time{}); write {
		t.Error("truncated endpoints written again")
	}
	if shrunk, write := Desired(svc, many[:10], full, time.Time{}); !write || shrunk.Annotations[corev1.EndpointsOverCapacity] != "" {
		t.Errorf("back under capacity: write %v annotations %v", write, shrunk.Annotations)
	}
}

func TestPlan(t *testing.T) {
	svc := testService()
	pods := []*corev1.Pod{testPod("a", "10.0.0.1", true)}
	right, _ := Desired(svc, pods, nil, time.Time{})
	right.ResourceVersion = "3"
	tests := []struct {
		name             string
		st               State
		del, wait, write bool
	}{
		{name: "service gone: its endpoints deleted, whether or not the cache shows them", st: State{}, del: true},
		{name: "no selector: not ours", st: State{Service: testService(func(s *corev1.Service) { s.Spec.Selector = nil })}},
		{name: "ExternalName: none", st: State{Service: testService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName })}},
		{name: "cache behind our write: wait", st: State{Service: svc, Pods: pods, Current: right, Stale: true}, wait: true},
		{name: "none yet: create", st: State{Service: svc, Pods: pods}, write: true},
		{name: "right already: nothing", st: State{Service: svc, Pods: pods, Current: right}},
		{name: "a pod more: update", st: State{Service: svc, Pods: append(pods, testPod("b", "10.0.0.2", true)), Current: right}, write: true},
	}
	for _, tt := range tests {
		p := plan(tt.st)
		if p.Delete != tt.del || p.Wait != tt.wait || (p.Write != nil) != tt.write {
			t.Errorf("%s: %+v, want delete %v wait %v write %v", tt.name, p, tt.del, tt.wait, tt.write)
		}
	}
}
