package endpointutil

import (
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestSliceTracker(t *testing.T) {
	mk := func(uid string, gen int64) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID(uid), Generation: gen,
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}}
	}
	svc := types.NamespacedName{Namespace: "ns", Name: "web"}
	tr := NewSliceTracker()
	if tr.Stale(svc, nil) || !tr.ShouldSync(mk("a", 1)) {
		t.Fatal("empty tracker")
	}
	tr.Written(mk("a", 2))
	if !tr.Stale(svc, nil) {
		t.Error("created slice missing from cache: not stale")
	}
	if !tr.Stale(svc, []*discoveryv1.EndpointSlice{mk("a", 1)}) {
		t.Error("older generation in cache: not stale")
	}
	if tr.Stale(svc, []*discoveryv1.EndpointSlice{mk("a", 2)}) || tr.Stale(svc, []*discoveryv1.EndpointSlice{mk("a", 3)}) {
		t.Error("current or newer cache: stale")
	}
	if tr.ShouldSync(mk("a", 2)) || !tr.ShouldSync(mk("a", 3)) {
		t.Error("ShouldSync: own write or outside change misjudged")
	}
	tr.Deleted(mk("a", 2))
	if !tr.Stale(svc, []*discoveryv1.EndpointSlice{mk("a", 2)}) || tr.Stale(svc, nil) {
		t.Error("deleted slice: staleness misjudged")
	}
	if !tr.HandleDeletion(mk("a", 2)) {
		t.Error("own deletion reported as unexpected")
	}
	tr.Written(mk("b", 1))
	if tr.HandleDeletion(mk("b", 1)) {
		t.Error("outside deletion reported as expected")
	}
	if tr.HandleDeletion(mk("unknown", 1)) {
		t.Error("deletion of an unknown slice reported as expected")
	}
	if tr.Stale(svc, nil) {
		t.Error("a deletion observed of an unknown slice makes its Service stale")
	}
	// A slice deleted by someone else before its create's answer was
	// back: its deletion is seen first, its write recorded after; the
	// Service must not wait for it forever.
	if tr.HandleDeletion(mk("raced", 1)) {
		t.Error("outside deletion of a slice being written reported as expected")
	}
	tr.Written(mk("raced", 1))
	if tr.Stale(svc, nil) {
		t.Error("a slice deleted before its write was recorded keeps its Service stale")
	}
	tr.Written(mk("c", 1))
	tr.ForgetService(svc)
	if tr.Stale(svc, nil) {
		t.Error("forgotten service still tracked")
	}
}
