package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"plainkube.dev/plainkube/internal/admission/allocator"
	"plainkube.dev/plainkube/internal/storage"
)

const nodePortRecords = "/registry/ranges/servicenodeports/"

// TestAllocationsFollowServices: the node port records and IPAddresses
// are exactly what the Services hold, through a dry-run update, a port
// removed, type changes and a delete; the repair loop frees a record a
// crash left without its Service and restores one a Service lacks.
func TestAllocationsFollowServices(t *testing.T) {
	srv, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	ports := func() []string {
		t.Helper()
		list, err := srv.store.List(ctx, nodePortRecords, storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, kv := range list.Items {
			out = append(out, strings.TrimPrefix(kv.Key, nodePortRecords))
		}
		slices.Sort(out)
		return out
	}
	heldPorts := func() []string {
		t.Helper()
		list, err := svcs.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range list.Items {
			for _, p := range s.Spec.Ports {
				if p.NodePort != 0 {
					out = append(out, fmt.Sprint(p.NodePort))
				}
			}
		}
		slices.Sort(out)
		return out
	}
	ipAddressOf := func(ip string) bool {
		_, err := cs.NetworkingV1().IPAddresses().Get(ctx, ip, metav1.GetOptions{})
		return err == nil
	}
	check := func(when string) {
		t.Helper()
		if got, want := ports(), heldPorts(); !slices.Equal(got, want) {
			t.Errorf("%s: node port records %v, Services hold %v", when, got, want)
		}
	}

	np, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "np"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
		Ports: []corev1.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 81}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("after the creates")

	// A dry run reserves nothing.
	dry := c.DeepCopy()
	dry.Spec.Type = corev1.ServiceTypeNodePort
	if _, err := svcs.Update(ctx, dry, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	check("after a dry-run update to NodePort")

	// A port removed lets its node port go.
	np.Spec.Ports = np.Spec.Ports[:1]
	if np, err = svcs.Update(ctx, np, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("after a port was removed")
	if len(ports()) != 1 {
		t.Errorf("records after a port was removed: %v", ports())
	}

	// NodePort -> ClusterIP: the node ports go; ClusterIP -> ExternalName:
	// the cluster IP goes.
	np.Spec.Type = corev1.ServiceTypeClusterIP
	if _, err = svcs.Update(ctx, np, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("after NodePort -> ClusterIP")
	if len(ports()) != 0 {
		t.Errorf("records after NodePort -> ClusterIP: %v", ports())
	}
	ip := c.Spec.ClusterIP
	c.Spec.Type, c.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
	if _, err = svcs.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ipAddressOf(ip) {
		t.Errorf("IPAddress %s still there after ClusterIP -> ExternalName", ip)
	}

	// Repair: a record whose Service never got stored (a crash between
	// the two; an old record has no time) goes, and a Service's port
	// without its record gets one.
	held, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "held"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
		Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	heldKey := nodePortRecords + fmt.Sprint(held.Spec.Ports[0].NodePort)
	if _, _, err := srv.store.Delete(ctx, heldKey, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.store.Create(ctx, nodePortRecords+"30999", []byte("default/ghost")); err != nil {
		t.Fatal(err)
	}
	young := fmt.Sprintf("default/young\n%s", time.Now().UTC().Format(time.RFC3339))
	if _, err := srv.store.Create(ctx, nodePortRecords+"30998", []byte(young)); err != nil {
		t.Fatal(err)
	}
	a := allocator.New(srv.store, netip.MustParsePrefix("10.96.0.0/12"), allocator.DefaultNodePorts)
	f := informers.NewSharedInformerFactory(cs, 0)
	a.Start(f, cs)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	f.Start(rctx.Done())
	f.WaitForCacheSync(rctx.Done())
	go a.RunRepair(rctx, slog.New(slog.NewTextHandler(io.Discard, nil)), 100*time.Millisecond)
	want := []string{"30998", fmt.Sprint(held.Spec.Ports[0].NodePort)}
	slices.Sort(want)
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(ports(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("records after repair: %v, want %v (the orphan gone, the young one kept, the missing one back)", ports(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
