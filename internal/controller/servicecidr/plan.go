package servicecidr

import (
	"net/netip"
	"slices"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// Finalizer keeps a ServiceCIDR while addresses depend on it.
	Finalizer = "networking.k8s.io/service-cidr-finalizer"
	// deletionGrace is how long a deleted ServiceCIDR without addresses
	// waits before it goes, as upstream.
	deletionGrace = 10 * time.Second

	readyMessage       = "Kubernetes Service CIDR is ready"
	terminatingMessage = "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"
)

// State is one ServiceCIDR, the others, and the allocated addresses.
type State struct {
	CIDR   *networkingv1.ServiceCIDR
	Others []*networkingv1.ServiceCIDR
	// Addresses are the IPAddress names (addresses) in the cluster.
	Addresses []string
	Now       time.Time
}

// Plan is what to write.
type Plan struct {
	AddFinalizer, RemoveFinalizer bool
	// Condition, if set, is the Ready condition to set.
	Condition *metav1.Condition
	// RecheckAfter asks for another look after this long.
	RecheckAfter time.Duration
}

func plan(st State) Plan {
	sc := st.CIDR
	if sc.DeletionTimestamp == nil {
		p := Plan{AddFinalizer: !slices.Contains(sc.Finalizers, Finalizer)}
		p.Condition = conditionIfChanged(sc, metav1.ConditionTrue, "", readyMessage, st.Now)
		return p
	}
	if !slices.Contains(sc.Finalizers, Finalizer) {
		return Plan{}
	}
	if stranded(st) {
		return Plan{Condition: conditionIfChanged(sc, metav1.ConditionFalse, networkingv1.ServiceCIDRReasonTerminating, terminatingMessage, st.Now)}
	}
	if wait := deletionGrace - st.Now.Sub(sc.DeletionTimestamp.Time); wait > 0 {
		return Plan{RecheckAfter: wait}
	}
	return Plan{RemoveFinalizer: true}
}

// stranded: an address lies in the ServiceCIDR and in no other one that is
// ready and not being deleted.
func stranded(st State) bool {
	own := prefixes(st.CIDR)
	var others []netip.Prefix
	for _, o := range st.Others {
		if o.DeletionTimestamp == nil && ready(o) {
			others = append(others, prefixes(o)...)
		}
	}
	in := func(ps []netip.Prefix, a netip.Addr) bool {
		return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	for _, name := range st.Addresses {
		a, err := netip.ParseAddr(name)
		if err == nil && in(own, a) && !in(others, a) {
			return true
		}
	}
	return false
}

func prefixes(sc *networkingv1.ServiceCIDR) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range sc.Spec.CIDRs {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

// ready: Ready is true, or not reported yet (as the allocators assume).
func ready(sc *networkingv1.ServiceCIDR) bool {
	c := meta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
	return c == nil || c.Status == metav1.ConditionTrue
}

func conditionIfChanged(sc *networkingv1.ServiceCIDR, status metav1.ConditionStatus, reason, message string, now time.Time) *metav1.Condition {
	cur := meta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
	if cur != nil && cur.Status == status && cur.Reason == reason && cur.Message == message {
		return nil
	}
	return &metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady, Status: status, Reason: reason,
		Message: message, LastTransitionTime: metav1.NewTime(now)}
}
