package replicaset

import (
	"errors"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// webRS is a ReplicaSet "web" of n replicas selecting app=web.
func webRS(n int32, edit ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "web-uid", Generation: 1},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}}}
	for _, e := range edit {
		e(rs)
	}
	return rs
}

// ownedBy makes the pod controlled by rs.
func ownedBy(rs *appsv1.ReplicaSet) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	}
}

func TestPlan(t *testing.T) {
	rs := webRS(3)
	own := func(name string, opts ...podOpt) *corev1.Pod {
		return mkPod(name, append([]podOpt{ownedBy(rs)}, opts...)...)
	}
	tests := []struct {
		name                   string
		rs                     *appsv1.ReplicaSet
		pods, related          []*corev1.Pod
		manage                 bool // expectations satisfied
		burst                  int
		wantActive             []string
		wantCreate             int
		wantDelete             []string
		wantAdopt, wantRelease []string
		wantTerminating        []string
	}{
		{
			name: "too few: create the difference", rs: rs, manage: true,
			pods:       []*corev1.Pod{own("a"), own("done", phase(corev1.PodSucceeded)), own("going", deleting())},
			wantActive: []string{"a"}, wantCreate: 2, wantTerminating: []string{"going"},
		},
		{
			name: "creates bounded by the burst", rs: webRS(10), manage: true, burst: 4,
			wantCreate: 4,
		},
		{
			name: "expectations outstanding: claims and status only", rs: rs, manage: false,
			pods:       []*corev1.Pod{own("a")},
			wantActive: []string{"a"},
		},
		{
			name: "being deleted: no creates", rs: webRS(3, func(r *appsv1.ReplicaSet) { r.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }),
			manage: true,
		},
		{
			name: "too many: delete the first ranked (unscheduled, then not ready, then doubled up on a node)", rs: webRS(2), manage: true,
			pods: []*corev1.Pod{
				own("ready-1", readySince(time.Hour), onNode("n1")),
				own("ready-2", readySince(time.Hour), onNode("n2")),
				own("unscheduled", onNode(""), phase(corev1.PodPending)),
				own("not-ready", onNode("n3")),
			},
			wantActive: []string{"ready-1", "ready-2", "unscheduled", "not-ready"},
			wantDelete: []string{"unscheduled", "not-ready"},
		},
		{
			name: "related pods rank doubled-up nodes first", rs: webRS(1), manage: true,
			pods:       []*corev1.Pod{own("alone", readySince(time.Hour), onNode("n1")), own("crowded", readySince(time.Hour), onNode("n2"))},
			related:    []*corev1.Pod{mkPod("sibling", readySince(time.Hour), onNode("n2"))},
			wantActive: []string{"alone", "crowded"}, wantDelete: []string{"crowded"},
		},
		{
			name: "a matching orphan is adopted and counted; a pod no longer matching is released", rs: rs, manage: true,
			pods: []*corev1.Pod{
				own("a"), mkPod("orphan"), own("stray", withLabels(map[string]string{"app": "other"})),
				mkPod("not-ours", withLabels(map[string]string{"app": "other"})),
			},
			wantActive: []string{"a", "orphan"}, wantCreate: 1,
			wantAdopt: []string{"orphan"}, wantRelease: []string{"stray"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			burst := tt.burst
			if burst == 0 {
				burst = DefaultBurstReplicas
			}
			p := plan(State{Workload: fromReplicaSet(tt.rs), Pods: tt.pods, Related: tt.related, Manage: tt.manage,
				TracksTerminating: true, Burst: burst, Now: t0})
			check := func(what string, got []*corev1.Pod, want []string) {
				if !slices.Equal(names(got), want) {
					t.Errorf("%s = %v, want %v", what, names(got), want)
				}
			}
			check("active", p.Active, tt.wantActive)
			check("delete", p.Delete, tt.wantDelete)
			check("adopt", p.Adopt, tt.wantAdopt)
			check("release", p.Release, tt.wantRelease)
			check("terminating", p.Terminating, tt.wantTerminating)
			if p.Create != tt.wantCreate {
				t.Errorf("create = %d, want %d", p.Create, tt.wantCreate)
			}
		})
	}
}

// planStatus: counts from the plan's pods, ReplicaFailure from a failed
// create, and a look again when ready pods will be available.
func TestPlanStatus(t *testing.T) {
	rs := webRS(2, func(r *appsv1.ReplicaSet) { r.Spec.MinReadySeconds = 30 })
	st := State{Workload: fromReplicaSet(rs), TracksTerminating: true, Now: t0}
	ready := []*corev1.Pod{mkPod("a", readySince(10*time.Second)), mkPod("b", readySince(time.Hour))}

	s, changed, after := planStatus(st, Plan{Active: ready}, nil)
	if !changed || s.Replicas != 2 || s.ReadyReplicas != 2 || s.AvailableReplicas != 1 || s.ObservedGeneration != 1 {
		t.Errorf("status %+v changed %v", s, changed)
	}
	if after != 30*time.Second {
		t.Errorf("look again after %s, want 30s", after)
	}

	s, _, after = planStatus(st, Plan{Active: ready[:1], Create: 1}, errors.New("quota"))
	if c := getCondition(s.Conditions, ReplicaFailure); c == nil || c.Reason != "FailedCreate" || c.Message != "quota" {
		t.Errorf("conditions %+v", s.Conditions)
	}
	if after != 0 {
		t.Errorf("a failed pass looks again after %s; want the error's backoff", after)
	}

	// Written, the same status is not written again.
	st.Workload.status, _, _ = planStatus(st, Plan{Active: ready}, nil)
	if _, changed, _ := planStatus(st, Plan{Active: ready}, nil); changed {
		t.Error("an unchanged status would be written again")
	}
}
