package namespace

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

func TestConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	type want struct {
		status          corev1.ConditionStatus
		reason, message string
		time            metav1.Time
	}
	tests := []struct {
		name    string
		before  []corev1.NamespaceCondition
		record  func(u *conditionUpdater)
		changed bool
		want    map[corev1.NamespaceConditionType]want
	}{
		{
			name:    "a clean pass sets every condition false",
			changed: true,
			want: map[corev1.NamespaceConditionType]want{
				corev1.NamespaceDeletionDiscoveryFailure: {corev1.ConditionFalse, "ResourcesDiscovered", "All resources successfully discovered", t1},
				corev1.NamespaceDeletionGVParsingFailure: {corev1.ConditionFalse, "ParsedGroupVersions", "All legacy kube types successfully parsed", t1},
				corev1.NamespaceDeletionContentFailure:   {corev1.ConditionFalse, "ContentDeleted", "All content successfully deleted, may be waiting on finalization", t1},
				corev1.NamespaceContentRemaining:         {corev1.ConditionFalse, "ContentRemoved", "All content successfully removed", t1},
				corev1.NamespaceFinalizersRemaining:      {corev1.ConditionFalse, "ContentHasNoFinalizers", "All content-preserving finalizers finished", t1},
			},
		},
		{
			name: "failures",
			record: func(u *conditionUpdater) {
				u.discoveryErr(&discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("stale")}})
				u.groupVersionErr(errors.New("bad gv"))
				u.contentErr(errors.New("b failed"))
				u.contentErr(errors.New("a failed"))
				u.contentTotals(contentTotals{
					remainingByResource: map[schema.GroupVersionResource]int{
						{Version: "v1", Resource: "pods"}:                          2,
						{Group: "example.com", Version: "v1", Resource: "widgets"}: 1,
						{Group: "example.com", Version: "v1", Resource: "gadgets"}: 0,
					},
					remainingByFinalizer: map[string]int{"example.com/hold": 1, "a.io/x": 2},
				})
			},
			changed: true,
			want: map[corev1.NamespaceConditionType]want{
				corev1.NamespaceDeletionDiscoveryFailure: {corev1.ConditionTrue, "DiscoveryFailed",
					"Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale", t1},
				corev1.NamespaceDeletionGVParsingFailure: {corev1.ConditionTrue, "GroupVersionParsingFailed", "bad gv", t1},
				corev1.NamespaceDeletionContentFailure: {corev1.ConditionTrue, "ContentDeletionFailed",
					"Failed to delete all resource types, 2 remaining: a failed, b failed", t1},
				corev1.NamespaceContentRemaining: {corev1.ConditionTrue, "SomeResourcesRemain",
					"Some resources are remaining: pods. has 2 resource instances, widgets.example.com has 1 resource instances", t1},
				corev1.NamespaceFinalizersRemaining: {corev1.ConditionTrue, "SomeFinalizersRemain",
					"Some content in the namespace has finalizers remaining: a.io/x in 2 resource instances, example.com/hold in 1 resource instances", t1},
			},
		},
		{
			name: "unchanged conditions are left alone; a new message keeps the transition time",
			before: []corev1.NamespaceCondition{
				{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse, Reason: "ResourcesDiscovered", Message: "All resources successfully discovered", LastTransitionTime: t0},
				{Type: corev1.NamespaceDeletionGVParsingFailure, Status: corev1.ConditionFalse, Reason: "ParsedGroupVersions", Message: "All legacy kube types successfully parsed", LastTransitionTime: t0},
				{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionTrue, Reason: "ContentDeletionFailed", Message: "old", LastTransitionTime: t0},
				{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "old", LastTransitionTime: t0},
				{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse, Reason: "ContentHasNoFinalizers", Message: "All content-preserving finalizers finished", LastTransitionTime: t0},
			},
			record: func(u *conditionUpdater) {
				u.contentErr(errors.New("new"))
			},
			changed: true,
			want: map[corev1.NamespaceConditionType]want{
				corev1.NamespaceDeletionDiscoveryFailure: {corev1.ConditionFalse, "ResourcesDiscovered", "All resources successfully discovered", t0},
				corev1.NamespaceDeletionContentFailure:   {corev1.ConditionTrue, "ContentDeletionFailed", "Failed to delete all resource types, 1 remaining: new", t0},
				corev1.NamespaceContentRemaining:         {corev1.ConditionFalse, "ContentRemoved", "All content successfully removed", t1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &conditionUpdater{now: t1}
			if tt.record != nil {
				tt.record(u)
			}
			status := corev1.NamespaceStatus{Conditions: tt.before}
			if got := u.update(&status); got != tt.changed {
				t.Errorf("changed = %v, want %v", got, tt.changed)
			}
			if len(status.Conditions) != len(conditionTypes) {
				t.Errorf("%d conditions, want %d", len(status.Conditions), len(conditionTypes))
			}
			for typ, w := range tt.want {
				c := getCondition(status.Conditions, typ)
				if c == nil {
					t.Errorf("%s missing", typ)
					continue
				}
				if c.Status != w.status || c.Reason != w.reason || c.Message != w.message || !c.LastTransitionTime.Equal(&w.time) {
					t.Errorf("%s = %s %s %q at %v, want %s %s %q at %v", typ, c.Status, c.Reason, c.Message, c.LastTransitionTime, w.status, w.reason, w.message, w.time)
				}
			}
			// A second identical pass changes nothing.
			u2 := &conditionUpdater{now: t1}
			if tt.record != nil {
				tt.record(u2)
			}
			if u2.update(&status) {
				t.Error("second identical pass reported a change")
			}
		})
	}
}
