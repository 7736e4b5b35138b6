package endpointslicemirroring

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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

// startController runs an in-memory control plane and the mirroring
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

// mirroredSlices lists the controller's slices of the Endpoints name and
// renders them as "ip:port(ready)" strings, sorted.
func mirroredSlices(cs kubernetes.Interface, ns, name string) ([]string, []discoveryv1.EndpointSlice, error) {
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + name + "," + discoveryv1.LabelManagedBy + "=" + ControllerName})
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
			out = append(out, fmt.Sprintf("%s:%s(%v)", strings.Join(e.Addresses, "+"), strings.Join(ports, "+"), ptr.Deref(e.Conditions.Ready, false)))
		}
	}
	slices.Sort(out)
	return out, list.Items, nil
}

// waitMirrored waits until the mirrored endpoints of name are want (none:
// no slices at all).
func waitMirrored(t *testing.T, cs kubernetes.Interface, ns, name string, want ...string) []discoveryv1.EndpointSlice {
	t.Helper()
	var got []string
	var items []discoveryv1.EndpointSlice
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		var err error
		got, items, err = mirroredSlices(cs, ns, name)
		return err == nil && slices.Equal(got, want) && (len(want) > 0 || len(items) == 0), nil
	})
	if err != nil {
		t.Fatalf("mirrored endpoints of %s/%s: got %q in %d slices, want %q", ns, name, got, len(items), want)
	}
	return items
}

func TestMirrorsEndpoints(t *testing.T) {
	cs := startController(t)
	ctx := context.Background()
	const ns = "mirror"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port80 := []corev1.EndpointPort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}
	services := cs.CoreV1().Services(ns)
	endpoints := cs.CoreV1().Endpoints(ns)

	// An Endpoints whose Service does not exist yet is not mirrored; its
	// Service showing up makes it so.
	lone := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "lone"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.9.9.9"}}, Ports: port80}}}
	if _, err := endpoints.Create(ctx, lone, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := services.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "ext", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{"note": "kept", corev1.EndpointsLastChangeTriggerTime: "2026-01-01T00:00:00Z"}},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.1.2.3", NodeName: ptr.To("node-a")}}, Ports: port80}},
	}
	created, err := endpoints.Create(ctx, ep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Create.
	items := waitMirrored(t, cs, ns, "ext", "10.1.2.3:80(true)")
	s := items[0]
	if !strings.HasPrefix(s.Name, "ext-") || s.AddressType != discoveryv1.AddressTypeIPv4 || s.Labels["team"] != "a" ||
		s.Annotations["note"] != "kept" || s.Annotations[corev1.EndpointsLastChangeTriggerTime] != "" {
		t.Errorf("slice %s: type %s labels %v annotations %v", s.Name, s.AddressType, s.Labels, s.Annotations)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Endpoints" || s.OwnerReferences[0].UID != created.UID {
		t.Errorf("slice %s owners %+v", s.Name, s.OwnerReferences)
	}
	if e := s.Endpoints[0]; ptr.Deref(e.NodeName, "") != "node-a" {
		t.Errorf("endpoint node %v", e.NodeName)
	}
	firstName := s.Name

	// Update: an address added, the first moved to notReadyAddresses; the
	// slice is updated in place.
	update := func(change func(*corev1.Endpoints)) {
		t.Helper()
		cur, err := endpoints.Get(ctx, "ext", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(cur)
		if _, err := endpoints.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update(func(e *corev1.Endpoints) {
		e.Subsets[0].Addresses = append(e.Subsets[0].Addresses, corev1.EndpointAddress{IP: "10.1.2.4"})
	})
	waitMirrored(t, cs, ns, "ext", "10.1.2.3:80(true)", "10.1.2.4:80(true)")
	update(func(e *corev1.Endpoints) {
		e.Subsets[0].NotReadyAddresses = []corev1.EndpointAddress{{IP: "10.1.2.3"}}
		e.Subsets[0].Addresses = []corev1.EndpointAddress{{IP: "10.1.2.4"}}
	})
	items = waitMirrored(t, cs, ns, "ext", "10.1.2.3:80(false)", "10.1.2.4:80(true)")
	if len(items) != 1 || items[0].Name != firstName {
		t.Errorf("slices %d, first %s: want the one slice %s updated in place", len(items), items[0].Name, firstName)
	}

	// The skip-mirror label removes the slices; dropping it brings them
	// back.
	update(func(e *corev1.Endpoints) { e.Labels[discoveryv1.LabelSkipMirror] = "true" })
	waitMirrored(t, cs, ns, "ext")
	update(func(e *corev1.Endpoints) { delete(e.Labels, discoveryv1.LabelSkipMirror) })
	waitMirrored(t, cs, ns, "ext", "10.1.2.3:80(false)", "10.1.2.4:80(true)")

	// A selector on the Service removes them; dropping it brings them back.
	setSelector := func(sel map[string]string) {
		t.Helper()
		cur, err := services.Get(ctx, "ext", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.Selector = sel
		if _, err := services.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setSelector(map[string]string{"app": "ext"})
	waitMirrored(t, cs, ns, "ext")
	setSelector(nil)
	waitMirrored(t, cs, ns, "ext", "10.1.2.3:80(false)", "10.1.2.4:80(true)")

	// A slice removed by someone else is made again.
	items = waitMirrored(t, cs, ns, "ext", "10.1.2.3:80(false)", "10.1.2.4:80(true)")
	if err := cs.DiscoveryV1().EndpointSlices(ns).Delete(ctx, items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "the deleted slice made again", func() (bool, error) {
		_, items, err := mirroredSlices(cs, ns, "ext")
		return err == nil && len(items) == 1 && items[0].Name != firstName, err
	})

	// Delete.
	if err := endpoints.Delete(ctx, "ext", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMirrored(t, cs, ns, "ext")

	// By now the lone Endpoints has long been looked at: still nothing.
	if got, items, err := mirroredSlices(cs, ns, "lone"); err != nil || len(items) != 0 {
		t.Fatalf("lone Endpoints without a Service mirrored: %q (%v)", got, err)
	}
	if _, err := services.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lone"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMirrored(t, cs, ns, "lone", "10.9.9.9:80(true)")
	// Its Service going removes them too.
	if err := services.Delete(ctx, "lone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMirrored(t, cs, ns, "lone")
}
