package endpointslice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

// startController runs an in-memory control plane and the EndpointSlice
// controller against it for one test.
func startController(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg := controllertest.StartServer(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)
	return controllertest.Clientset(t, cfg)
}

// eventually polls cond every 20 ms for up to 10 s.
var eventually = controllertest.Eventually

func mustCreateNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mustCreateNode(t *testing.T, cs kubernetes.Interface, name, zone string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}}}
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// runPod creates a pod bound to node with a container port named "http",
// then gives it an IP and the readiness asked for, as a kubelet would.
func runPod(t *testing.T, cs kubernetes.Interface, ns, name, node, ip string, httpPort int32, isReady bool) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: httpPort}}}}},
	}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.PodIP = ip
	created.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	setReady(created, isReady)
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setReady(pod *corev1.Pod, isReady bool) {
	status := corev1.ConditionFalse
	if isReady {
		status = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
}

func markReady(t *testing.T, cs kubernetes.Interface, ns, name string, isReady bool) {
	t.Helper()
	pod, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady(pod, isReady)
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// endpointsOf renders the endpoints in the controller's slices of a
// service as sorted "pod=ip:port(ready,serving,terminating)@zone" strings.
func endpointsOf(cs kubernetes.Interface, ns, svc string) ([]string, []discoveryv1.EndpointSlice, error) {
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + svc + "," + discoveryv1.LabelManagedBy + "=" + ControllerName})
	if err != nil {
		return nil, nil, err
	}
	var out []string
	for _, s := range list.Items {
		var ports []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprint(*p.Port))
		}
		for _, e := range s.Endpoints {
			flag := func(b *bool) string {
				if b != nil && *b {
					return "1"
				}
				return "0"
			}
			out = append(out, fmt.Sprintf("%s=%s:%s(%s%s%s)@%s", e.TargetRef.Name, strings.Join(e.Addresses, "+"), strings.Join(ports, "+"),
				flag(e.Conditions.Ready), flag(e.Conditions.Serving), flag(e.Conditions.Terminating), ptr.Deref(e.Zone, "")))
		}
	}
	slices.Sort(out)
	return out, list.Items, nil
}

func waitEndpoints(t *testing.T, cs kubernetes.Interface, ns, svc string, want ...string) []discoveryv1.EndpointSlice {
	t.Helper()
	var got []string
	var items []discoveryv1.EndpointSlice
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var err error
		got, items, err = endpointsOf(cs, ns, svc)
		return err == nil && slices.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("endpoints of %s/%s: got %q, want %q", ns, svc, got, want)
	}
	return items
}

func TestEndpointSlicesFollowPods(t *testing.T) {
	cs := startController(t)
	ctx := context.Background()
	mustCreateNamespace(t, cs, "app")
	mustCreateNode(t, cs, "node-a", "zone-1")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "blue"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	if _, err := cs.CoreV1().Services("app").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// No pods yet: one placeholder slice.
	eventually(t, "a placeholder slice", func() (bool, error) {
		_, items, err := endpointsOf(cs, "app", "web")
		return err == nil && len(items) == 1 && len(items[0].Endpoints) == 0, err
	})

	runPod(t, cs, "app", "a", "node-a", "10.244.0.1", 8080, true)
	runPod(t, cs, "app", "b", "node-a", "10.244.0.2", 8080, false)
	runPod(t, cs, "app", "c", "node-a", "10.244.0.3", 9090, true) // the named port resolves differently
	items := waitEndpoints(t, cs, "app", "web",
		"a=10.244.0.1:8080(110)@zone-1",
		"b=10.244.0.2:8080(000)@zone-1",
		"c=10.244.0.3:9090(110)@zone-1")
	for _, s := range items {
		if !strings.HasPrefix(s.Name, "web-") || s.Labels["team"] != "blue" || s.AddressType != discoveryv1.AddressTypeIPv4 ||
			len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Name != "web" || s.Annotations[corev1.EndpointsLastChangeTriggerTime] == "" {
			t.Errorf("slice %s: labels %v owners %v annotations %v", s.Name, s.Labels, s.OwnerReferences, s.Annotations)
		}
		if len(s.Endpoints) > 0 && (len(s.Ports) != 1 || *s.Ports[0].Name != "http" || *s.Ports[0].Protocol != corev1.ProtocolTCP) {
			t.Errorf("slice %s ports %+v", s.Name, s.Ports)
		}
	}
	if len(items) != 2 {
		t.Errorf("%d slices, want 2 (one per port set; the placeholder reused)", len(items))
	}

	// Readiness changes, deletions and terminations follow.
	markReady(t, cs, "app", "b", true)
	markReady(t, cs, "app", "a", false)
	waitEndpoints(t, cs, "app", "web",
		"a=10.244.0.1:8080(000)@zone-1",
		"b=10.244.0.2:8080(110)@zone-1",
		"c=10.244.0.3:9090(110)@zone-1")
	zero := int64(0)
	if err := cs.CoreV1().Pods("app").Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("app").Delete(ctx, "c", metav1.DeleteOptions{}); err != nil { // stays, terminating
		t.Fatal(err)
	}
	waitEndpoints(t, cs, "app", "web",
		"b=10.244.0.2:8080(110)@zone-1",
		"c=10.244.0.3:9090(011)@zone-1")

	// A slice deleted behind the controller's back comes back.
	_, items, _ = endpointsOf(cs, "app", "web")
	for _, s := range items {
		if err := cs.DiscoveryV1().EndpointSlices("app").Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitEndpoints(t, cs, "app", "web",
		"b=10.244.0.2:8080(110)@zone-1",
		"c=10.244.0.3:9090(011)@zone-1")

	// Relabelled pods leave the service.
	b, err := cs.CoreV1().Pods("app").Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Labels = map[string]string{"app": "other"}
	if _, err := cs.CoreV1().Pods("app").Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, cs, "app", "web", "c=10.244.0.3:9090(011)@zone-1")

	// The API server's own slice for "kubernetes" (no selector) is left
	// alone, and no second one appears.
	time.Sleep(200 * time.Millisecond)
	list, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "kubernetes" || list.Items[0].Labels[discoveryv1.LabelManagedBy] != "plainkube-apiserver" {
		t.Errorf("kubernetes slices: %+v", list.Items)
	}
}

func TestEndpointSlicesManyPods(t *testing.T) {
	cs := startController(t)
	ctx := context.Background()
	mustCreateNamespace(t, cs, "big")
	mustCreateNode(t, cs, "node-a", "")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := cs.CoreV1().Services("big").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 120
	for i := range n {
		runPod(t, cs, "big", fmt.Sprintf("p%03d", i), "node-a", fmt.Sprintf("10.244.%d.%d", i/200, i%200+1), 8080, true)
	}
	eventually(t, "120 endpoints in two slices", func() (bool, error) {
		got, items, err := endpointsOf(cs, "big", "web")
		if err != nil {
			return false, err
		}
		for _, s := range items {
			if len(s.Endpoints) > DefaultMaxEndpointsPerSlice {
				return false, fmt.Errorf("slice %s has %d endpoints", s.Name, len(s.Endpoints))
			}
		}
		return len(got) == n && len(items) == 2, nil
	})
}
