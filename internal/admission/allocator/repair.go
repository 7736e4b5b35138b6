package allocator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"plainkube.dev/plainkube/internal/storage"
)

const (
	// RepairInterval is how often the repair loop runs, as upstream's.
	RepairInterval = 3 * time.Minute
	// orphanGrace: an IPAddress or a node port is taken before its Service
	// is stored, so one without its Service is only an orphan once this old.
	orphanGrace = time.Minute
)

// RunRepair keeps the allocation records true until ctx ends, at once and
// then every interval, as upstream's repair controllers: the default
// ServiceCIDR exists and is Ready; every Service's cluster IP has its
// IPAddress (and the older records, of a server before IPAddresses, are
// moved over and removed); an IPAddress of this allocator whose Service is
// gone or holds another address is deleted; the node port records are
// made equal to the Services' node ports (repairNodePorts).
func (a *Services) RunRepair(ctx context.Context, log *slog.Logger, interval time.Duration) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := a.repair(ctx); err != nil && ctx.Err() == nil {
			log.Warn("service IP and node port repair", "err", err)
		}
	}, interval)
}

func (a *Services) repair(ctx context.Context) error {
	if err := a.ensureDefaultServiceCIDR(ctx); err != nil {
		return err
	}
	svcs, err := a.client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	ips, err := a.client.NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	recorded := map[string]*networkingv1.IPAddress{}
	for i := range ips.Items {
		recorded[ips.Items[i].Name] = &ips.Items[i]
	}
	held := map[string]bool{} // "namespace/name/ip"
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		for _, s := range svc.Spec.ClusterIPs {
			ip, err := netip.ParseAddr(s)
			if err != nil {
				continue // None, or not an address
			}
			held[owner(svc)+"/"+ip.String()] = true
			if _, ok := recorded[ip.String()]; ok {
				continue
			}
			if err := a.takeIP(ctx, ip, svc); err != nil && !errors.Is(err, errAllocated) {
				return err
			}
		}
	}
	for name, ip := range recorded {
		r := ip.Spec.ParentRef
		if ip.Labels[networkingv1.LabelManagedBy] != ManagedBy || r == nil || r.Resource != "services" || r.Group != "" {
			continue
		}
		if held[r.Namespace+"/"+r.Name+"/"+name] || time.Since(ip.CreationTimestamp.Time) < orphanGrace {
			continue
		}
		uid := ip.UID
		err := a.client.NetworkingV1().IPAddresses().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	if err := a.repairNodePorts(ctx, svcs.Items); err != nil {
		return err
	}
	if a.legacy.Load() {
		if err := a.dropLegacy(ctx); err != nil {
			return err
		}
		a.legacy.Store(false)
	}
	return nil
}

// repairNodePorts makes the node port records equal the Services' node
// ports: a record whose Service does not hold the port (left by a crash
// between taking it and storing the Service, or by a server before
// AfterUpdate released dropped ports) is deleted once older than
// orphanGrace; a port a Service holds without a record gets one.
func (a *Services) repairNodePorts(ctx context.Context, svcs []corev1.Service) error {
	held := map[string]string{} // port -> owner
	for i := range svcs {
		for _, p := range svcs[i].Spec.Ports {
			if p.NodePort != 0 {
				held[fmt.Sprint(p.NodePort)] = owner(&svcs[i])
			}
		}
	}
	list, err := a.store.List(ctx, portPrefix, storage.ListOptions{})
	if err != nil {
		return err
	}
	recorded := map[string]bool{}
	for _, kv := range list.Items {
		port := strings.TrimPrefix(kv.Key, portPrefix)
		o, taken := portRecord(kv.Value)
		if held[port] == o || time.Since(taken) < orphanGrace {
			recorded[port] = true
			continue
		}
		if _, _, err := a.store.Delete(ctx, kv.Key, kv.ModRevision); err != nil && !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
	for port, o := range held {
		if recorded[port] {
			continue
		}
		if err := a.take(ctx, portPrefix+port, o); err != nil && !errors.Is(err, storage.ErrKeyExists) {
			return err
		}
	}
	return nil
}

// ensureDefaultServiceCIDR publishes the server's range as the ServiceCIDR
// "kubernetes", Ready.
func (a *Services) ensureDefaultServiceCIDR(ctx context.Context) error {
	want := []string{a.cidr.String()}
	sc, err := a.client.NetworkingV1().ServiceCIDRs().Get(ctx, DefaultServiceCIDRName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sc, err = a.client.NetworkingV1().ServiceCIDRs().Create(ctx, &networkingv1.ServiceCIDR{
			ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceCIDRName},
			Spec:       networkingv1.ServiceCIDRSpec{CIDRs: want},
		}, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	if !slices.Equal(sc.Spec.CIDRs, want) || sc.DeletionTimestamp != nil {
		return nil // the server still allocates from its own range
	}
	if c := meta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady); c != nil && c.Status != metav1.ConditionUnknown {
		return nil
	}
	meta.SetStatusCondition(&sc.Status.Conditions, metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady,
		Status: metav1.ConditionTrue, Message: "Kubernetes default Service CIDR is ready"})
	_, err = a.client.NetworkingV1().ServiceCIDRs().UpdateStatus(ctx, sc, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil // next pass
	}
	return err
}

// dropLegacy removes the older allocation records once every Service's
// address has its IPAddress.
func (a *Services) dropLegacy(ctx context.Context) error {
	res, err := a.store.List(ctx, legacyIPPrefix, storage.ListOptions{})
	if err != nil {
		return err
	}
	for _, kv := range res.Items {
		if _, _, err := a.store.Delete(ctx, kv.Key, 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	return nil
}
