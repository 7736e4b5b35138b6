package allocator

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

const (
	// DefaultServiceCIDRName is the ServiceCIDR the server's --service-cidr
	// is published as.
	DefaultServiceCIDRName = "kubernetes"
	// ManagedBy is the managed-by label of the IPAddresses this allocator
	// writes, upstream's allocator's name.
	ManagedBy = "ipallocator.k8s.io"
)

var (
	errFull     = errors.New("range is full")
	errNotReady = errors.New("the Service IP allocator is not ready yet")
	// errAllocated: the address is another's already.
	errAllocated = errors.New("provided IP is already allocated")
)

// ranges are the prefixes cluster IPs of one family may come from: the
// server's own range first, then every ServiceCIDR that is ready and not
// being deleted, by name.
func (a *Services) ranges(is6 bool) []netip.Prefix {
	var out []netip.Prefix
	if a.cidr.Addr().Is6() == is6 {
		out = append(out, a.cidr)
	}
	if a.serviceCIDRs == nil {
		return out
	}
	cidrs, _ := a.serviceCIDRs.List(labels.Everything())
	slices.SortFunc(cidrs, func(x, y *networkingv1.ServiceCIDR) int { return strings.Compare(x.Name, y.Name) })
	for _, sc := range cidrs {
		if sc.DeletionTimestamp != nil || !serviceCIDRReady(sc) {
			continue
		}
		for _, c := range sc.Spec.CIDRs {
			p, err := netip.ParsePrefix(c)
			if err == nil && p.Addr().Is6() == is6 && !slices.Contains(out, p.Masked()) {
				out = append(out, p.Masked())
			}
		}
	}
	return out
}

// serviceCIDRReady: its Ready condition is true, or it has none yet (no
// controller has looked at it: as upstream, it is assumed ready).
func serviceCIDRReady(sc *networkingv1.ServiceCIDR) bool {
	for _, c := range sc.Status.Conditions {
		if c.Type == networkingv1.ServiceCIDRConditionReady {
			return c.Status == metav1.ConditionTrue
		}
	}
	return true
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// takeIP records ip as the Service's: an IPAddress object named by it,
// created only if absent, so that no two Services (nor two API servers)
// ever hold the same address.
func (a *Services) takeIP(ctx context.Context, ip netip.Addr, svc *corev1.Service) error {
	if a.client == nil {
		return errNotReady
	}
	if a.legacy.Load() {
		// Before the repair has moved the older allocation records over
		// (repair.go), an address recorded there is taken too.
		if _, err := a.store.Get(ctx, legacyIPPrefix+ip.String()); err == nil {
			return errAllocated
		}
	}
	obj := &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: ip.String(), Labels: map[string]string{
			networkingv1.LabelIPAddressFamily: string(family(ip.Is6())),
			networkingv1.LabelManagedBy:       ManagedBy,
		}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{
			Group: "", Resource: "services", Namespace: svc.Namespace, Name: svc.Name}},
	}
	_, err := a.client.NetworkingV1().IPAddresses().Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return errAllocated
	}
	return err
}

// releaseIP deletes the address's IPAddress if it is still the Service's.
func (a *Services) releaseIP(ctx context.Context, ip string, svc *corev1.Service) {
	if a.client == nil {
		return
	}
	cur, err := a.client.NetworkingV1().IPAddresses().Get(ctx, ip, metav1.GetOptions{})
	if err != nil || !heldBy(cur, svc.Namespace, svc.Name) {
		return // gone already, or another's: the repair loop sees to leaks
	}
	uid := cur.UID
	_ = a.client.NetworkingV1().IPAddresses().Delete(ctx, ip, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func heldBy(ip *networkingv1.IPAddress, namespace, name string) bool {
	r := ip.Spec.ParentRef
	return r != nil && r.Group == "" && r.Resource == "services" && r.Namespace == namespace && r.Name == name
}

// randomIP takes a free address for svc from the ranges of its family:
// random picks first, then, in a range where those all collided, the first
// address the range's IPAddresses leave free. Never a range's network or
// (IPv4) broadcast address, nor the server range's first address (the
// kubernetes Service's).
func (a *Services) randomIP(ctx context.Context, svc *corev1.Service, is6 bool) (netip.Addr, error) {
	rs := a.ranges(is6)
	if len(rs) == 0 {
		return netip.Addr{}, fmt.Errorf("no Service CIDR of the %s family", family(is6))
	}
	for _, r := range rs {
		ip, err := a.randomIPIn(ctx, r, svc)
		if !errors.Is(err, errFull) {
			return ip, err
		}
	}
	return netip.Addr{}, errFull
}

func family(is6 bool) corev1.IPFamily {
	if is6 {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

func (a *Services) randomIPIn(ctx context.Context, r netip.Prefix, svc *corev1.Service) (netip.Addr, error) {
	first, last := a.usable(r)
	if last < first {
		return netip.Addr{}, errFull
	}
	try := func(off int64) (netip.Addr, bool, error) {
		ip := addrAt(r, off)
		switch err := a.takeIP(ctx, ip, svc); {
		case err == nil:
			return ip, true, nil
		case errors.Is(err, errAllocated):
			return netip.Addr{}, false, nil
		default:
			return netip.Addr{}, false, err
		}
	}
	for range 64 {
		if ip, ok, err := try(first + rand.Int64N(last-first+1)); ok || err != nil {
			return ip, err
		}
	}
	// Mostly full: walk the range past the addresses already taken.
	list, err := a.client.NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return netip.Addr{}, err
	}
	taken := map[string]bool{}
	for _, ip := range list.Items {
		taken[ip.Name] = true
	}
	for off := first; off <= last && off-first < 1<<20; off++ {
		if taken[addrAt(r, off).String()] {
			continue
		}
		if ip, ok, err := try(off); ok || err != nil {
			return ip, err
		}
	}
	return netip.Addr{}, errFull
}

// usable is the range of offsets into r that may be handed out.
func (a *Services) usable(r netip.Prefix) (first, last int64) {
	bits := r.Addr().BitLen() - r.Bits()
	size := int64(1) << min(bits, 62)
	first, last = 1, size-1
	if r.Addr().Is4() {
		last-- // the broadcast address
	}
	if r == a.cidr {
		first++ // the kubernetes Service's
	}
	return first, last
}

func addrAt(r netip.Prefix, off int64) netip.Addr {
	base := new(big.Int).SetBytes(r.Addr().AsSlice())
	n := new(big.Int).Add(base, big.NewInt(off))
	ip, _ := netip.AddrFromSlice(n.FillBytes(make([]byte, len(r.Addr().AsSlice()))))
	return ip
}
