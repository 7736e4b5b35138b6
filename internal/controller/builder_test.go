package controller

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// owned is a ReplicaSet in ns with the given resourceVersion, labels and
// controller (an owner name; "" for an orphan).
func owned(rv, controller string, labels map[string]string) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rs", ResourceVersion: rv, Labels: labels}}
	if controller != "" {
		t := true
		rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: controller,
			UID: types.UID(controller + "-uid"), Controller: &t}}
	}
	return rs
}

// The event → key mapping of owned objects, given primaries a (present,
// UID a-uid) and b (present, UID b-uid), and gone (UID mismatch), with the
// orphan lookup returning "ns/adopter" for labelled orphans.
func TestOwnedMapper(t *testing.T) {
	m := ownedMapper{
		resolve: func(ns string, ref *metav1.OwnerReference) (string, bool) {
			if ref.Kind != "Deployment" || (ref.Name != "a" && ref.Name != "b") {
				return "", false
			}
			return ns + "/" + ref.Name, true
		},
		orphans: func(obj metav1.Object) []string {
			if len(obj.GetLabels()) == 0 {
				return nil
			}
			return []string{"ns/adopter"}
		},
	}
	app := map[string]string{"app": "web"}
	deleting := owned("1", "", app)
	deleting.DeletionTimestamp = &metav1.Time{}
	tests := []struct {
		name     string
		event    Event
		old, cur *appsv1.ReplicaSet
		want     []string
	}{
		{"add owned", Added, nil, owned("1", "a", nil), []string{"ns/a"}},
		{"add owned by a gone owner", Added, nil, owned("1", "gone", nil), nil},
		{"add orphan", Added, nil, owned("1", "", app), []string{"ns/adopter"}},
		{"add orphan being deleted", Added, nil, deleting, nil},
		{"resync", Updated, owned("1", "a", nil), owned("1", "a", nil), nil},
		{"update owned", Updated, owned("1", "a", nil), owned("2", "a", nil), []string{"ns/a"}},
		{"controller changed", Updated, owned("1", "a", nil), owned("2", "b", nil), []string{"ns/a", "ns/b"}},
		{"released", Updated, owned("1", "a", app), owned("2", "", app), []string{"ns/a", "ns/adopter"}},
		{"orphan relabelled", Updated, owned("1", "", nil), owned("2", "", app), []string{"ns/adopter"}},
		{"orphan, labels unchanged", Updated, owned("1", "", app), owned("2", "", app), nil},
		{"delete owned", Deleted, nil, owned("1", "a", nil), []string{"ns/a"}},
		{"delete orphan", Deleted, nil, owned("1", "", app), nil},
	}
	for _, tt := range tests {
		var got []string
		switch tt.event {
		case Added:
			got = m.added(tt.cur)
		case Updated:
			got = m.updated(tt.old, tt.cur)
		case Deleted:
			got = m.deleted(tt.cur)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: keys %v, want %v", tt.name, got, tt.want)
		}
	}

	// Without an orphan lookup, orphans wake no one.
	m.orphans = nil
	if got := m.added(owned("1", "", app)); got != nil {
		t.Errorf("orphan without OrphanSelector: %v", got)
	}
}

func TestPrimaryKey(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	for _, tt := range []struct {
		obj  any
		want string
		ok   bool
	}{
		{d, "ns/web", true},
		{cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: d}, "ns/gone", true},
		{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}, "cluster", true},
		{"not an object", "", false},
	} {
		got, ok := PrimaryKey(tt.obj)
		if got != tt.want || ok != tt.ok {
			t.Errorf("PrimaryKey(%v) = %q, %v; want %q, %v", tt.obj, got, ok, tt.want, tt.ok)
		}
	}
}

func TestOrphanSelection(t *testing.T) {
	web := map[string]string{"app": "web"}
	for _, tt := range []struct {
		sel  *metav1.LabelSelector
		want bool
	}{
		{nil, false},
		{&metav1.LabelSelector{}, false},
		{&metav1.LabelSelector{MatchLabels: web}, true},
		{&metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, false},
		{&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bad"}}}, false},
	} {
		if got := selects(LabelSelector(tt.sel), web); got != tt.want {
			t.Errorf("selects(%v) = %v, want %v", tt.sel, got, tt.want)
		}
	}
}
