package servicecidr

import (
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlan(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	cidr := func(name string, mods ...func(*networkingv1.ServiceCIDR)) *networkingv1.ServiceCIDR {
		sc := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{Finalizer}},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.200.0.0/24"}}}
		for _, m := range mods {
			m(sc)
		}
		return sc
	}
	readyTrue := func(sc *networkingv1.ServiceCIDR) {
		sc.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Message: readyMessage}}
	}
	deletedAgo := func(d time.Duration) func(*networkingv1.ServiceCIDR) {
		return func(sc *networkingv1.ServiceCIDR) { sc.DeletionTimestamp = &metav1.Time{Time: now.Add(-d)} }
	}
	noFinalizer := func(sc *networkingv1.ServiceCIDR) { sc.Finalizers = nil }
	wider := cidr("wider", readyTrue, func(sc *networkingv1.ServiceCIDR) { sc.Spec.CIDRs = []string{"10.200.0.0/16"} })
	tests := []struct {
		name string
		st   State
		want func(Plan) bool
	}{
		{"new: finalizer and Ready", State{CIDR: cidr("a", noFinalizer)},
			func(p Plan) bool {
				return p.AddFinalizer && p.Condition != nil && p.Condition.Status == metav1.ConditionTrue
			}},
		{"ready already: nothing", State{CIDR: cidr("a", readyTrue)},
			func(p Plan) bool { return p == Plan{} }},
		{"deleted, an address inside: Terminating", State{CIDR: cidr("a", readyTrue, deletedAgo(time.Minute)), Addresses: []string{"10.200.0.5"}},
			func(p Plan) bool {
				return !p.RemoveFinalizer && p.Condition != nil && p.Condition.Reason == networkingv1.ServiceCIDRReasonTerminating
			}},
		{"deleted, the address covered by another ready range: goes", State{CIDR: cidr("a", deletedAgo(time.Minute)), Others: []*networkingv1.ServiceCIDR{wider}, Addresses: []string{"10.200.0.5"}},
			func(p Plan) bool { return p.RemoveFinalizer }},
		{"deleted, the other range being deleted too: stays", State{CIDR: cidr("a", deletedAgo(time.Minute)), Others: []*networkingv1.ServiceCIDR{cidr("w", deletedAgo(time.Second), func(sc *networkingv1.ServiceCIDR) { sc.Spec.CIDRs = []string{"10.200.0.0/16"} })}, Addresses: []string{"10.200.0.5"}},
			func(p Plan) bool { return !p.RemoveFinalizer && p.Condition != nil }},
		{"deleted, addresses elsewhere only: goes", State{CIDR: cidr("a", deletedAgo(time.Minute)), Addresses: []string{"10.96.0.1", "fd00::1"}},
			func(p Plan) bool { return p.RemoveFinalizer }},
		{"deleted just now, empty: waits out the grace", State{CIDR: cidr("a", deletedAgo(3*time.Second))},
			func(p Plan) bool { return !p.RemoveFinalizer && p.RecheckAfter == 7*time.Second }},
		{"deleted, finalizer gone: nothing", State{CIDR: cidr("a", noFinalizer, deletedAgo(time.Minute)), Addresses: []string{"10.200.0.5"}},
			func(p Plan) bool { return p == Plan{} }},
	}
	for _, tt := range tests {
		tt.st.Now = now
		if p := plan(tt.st); !tt.want(p) {
			t.Errorf("%s: plan %+v", tt.name, p)
		}
	}
}
