package disruption

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func readyPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func unreadyPod(name string) *corev1.Pod {
	p := readyPod(name)
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	return p
}

func deletingPod(name string) *corev1.Pod {
	p := readyPod(name)
	p.DeletionTimestamp = &metav1.Time{Time: now}
	return p
}

func pods(ps ...*corev1.Pod) []*corev1.Pod { return ps }

func budget(min, maxUnavailable *intstr.IntOrString, mutate ...func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "pdb", Namespace: "ns", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: min, MaxUnavailable: maxUnavailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}
	for _, m := range mutate {
		m(pdb)
	}
	return pdb
}

func num(n int) *intstr.IntOrString    { v := intstr.FromInt32(int32(n)); return &v }
func pct(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }

func disrupted(entries map[string]time.Time) func(*policyv1.PodDisruptionBudget) {
	return func(pdb *policyv1.PodDisruptionBudget) {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
		for name, at := range entries {
			pdb.Status.DisruptedPods[name] = metav1.NewTime(at)
		}
	}
}

// current gives the budget the status plan would write for it.
func current(expected, desired, healthy, allowed int32) func(*policyv1.PodDisruptionBudget) {
	return func(pdb *policyv1.PodDisruptionBudget) {
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, ExpectedPods: expected,
			DesiredHealthy: desired, CurrentHealthy: healthy, DisruptionsAllowed: allowed}
		setDisruptionAllowed(&pdb.Status, now.Add(-time.Hour))
	}
}

func TestPlan(t *testing.T) {
	three := pods(readyPod("a"), readyPod("b"), readyPod("c"))
	type want struct {
		write                               bool
		expected, desired, healthy, allowed int32
		reason                              string // of DisruptionAllowed
		message                             string // a substring of its message
		disrupted                           []string
		recheck                             time.Duration
		events                              []string // reasons
	}
	for _, tt := range []struct {
		name string
		st   State
		want want
	}{
		{"minAvailable 2 over 3 ready pods: one disruption allowed",
			State{PDB: budget(num(2), nil), Pods: three},
			want{write: true, expected: 3, desired: 2, healthy: 3, allowed: 1, reason: policyv1.SufficientPodsReason}},
		{"minAvailable 3 over 3: none allowed",
			State{PDB: budget(num(3), nil), Pods: three},
			want{write: true, expected: 3, desired: 3, healthy: 3, allowed: 0, reason: policyv1.InsufficientPodsReason}},
		{"no pods: none allowed, NoPods event",
			State{PDB: budget(num(0), nil)},
			want{write: true, expected: 0, desired: 0, healthy: 0, allowed: 0, reason: policyv1.InsufficientPodsReason, events: []string{"NoPods"}}},
		{"unready and deleting pods are not healthy",
			State{PDB: budget(num(1), nil), Pods: pods(readyPod("a"), unreadyPod("b"), deletingPod("c"))},
			want{write: true, expected: 3, desired: 1, healthy: 1, allowed: 0, reason: policyv1.InsufficientPodsReason}},
		{"maxUnavailable 1 of a scale of 3",
			State{PDB: budget(nil, num(1)), Pods: three, Scale: &Scale{Expected: 3}},
			want{write: true, expected: 3, desired: 2, healthy: 3, allowed: 1, reason: policyv1.SufficientPodsReason}},
		{"maxUnavailable 34% of 3 rounds up to 2",
			State{PDB: budget(nil, pct("34%")), Pods: three, Scale: &Scale{Expected: 3}},
			want{write: true, expected: 3, desired: 1, healthy: 3, allowed: 2, reason: policyv1.SufficientPodsReason}},
		{"maxUnavailable beyond the scale: desiredHealthy 0",
			State{PDB: budget(nil, num(5)), Pods: three, Scale: &Scale{Expected: 3}},
			want{write: true, expected: 3, desired: 0, healthy: 3, allowed: 3, reason: policyv1.SufficientPodsReason}},
		{"minAvailable 50% of a scale of 5 rounds up to 3",
			State{PDB: budget(pct("50%"), nil), Pods: three, Scale: &Scale{Expected: 5}},
			want{write: true, expected: 5, desired: 3, healthy: 3, allowed: 0, reason: policyv1.InsufficientPodsReason}},
		{"percentage with unmanaged pods: counted on the managed scale, warned",
			State{PDB: budget(pct("50%"), nil), Pods: three, Scale: &Scale{Expected: 2, Unmanaged: []string{"c"}}},
			want{write: true, expected: 2, desired: 1, healthy: 3, allowed: 2, reason: policyv1.SufficientPodsReason, events: []string{"UnmanagedPods"}}},
		{"controllers not found: fail safe",
			State{PDB: budget(nil, num(1), current(3, 2, 3, 1)), Pods: three, ScaleErr: errors.New(`found no controllers for pod "a"`)},
			want{write: true, expected: 3, desired: 2, healthy: 3, allowed: 0, reason: policyv1.SyncFailedReason,
				message: `found no controllers for pod "a"`, events: []string{"CalculateExpectedPodCountFailed"}}},
		{"invalid percentage: fail safe",
			State{PDB: budget(pct("x%"), nil), Pods: three, Scale: &Scale{Expected: 3}},
			want{write: true, allowed: 0, reason: policyv1.SyncFailedReason, message: "invalid value", events: []string{"CalculateExpectedPodCountFailed"}}},
		{"selector error: fail safe",
			State{PDB: budget(num(1), nil), PodsErr: errors.New("bad selector")},
			want{write: true, reason: policyv1.SyncFailedReason, message: "bad selector", events: []string{"NoPods"}}},
		{"a pod evicted a minute ago is not healthy and stays recorded",
			State{PDB: budget(num(2), nil, disrupted(map[string]time.Time{"a": now.Add(-time.Minute)})), Pods: three},
			want{write: true, expected: 3, desired: 2, healthy: 2, allowed: 0, reason: policyv1.InsufficientPodsReason,
				disrupted: []string{"a"}, recheck: time.Minute}},
		{"an eviction that did not delete its pod within the timeout is dropped",
			State{PDB: budget(num(2), nil, disrupted(map[string]time.Time{"a": now.Add(-3 * time.Minute)})), Pods: three},
			want{write: true, expected: 3, desired: 2, healthy: 3, allowed: 1, reason: policyv1.SufficientPodsReason, events: []string{"NotDeleted"}}},
		{"an evicted pod being deleted, or gone, leaves the record",
			State{PDB: budget(num(1), nil, disrupted(map[string]time.Time{"c": now, "gone": now})), Pods: pods(readyPod("a"), readyPod("b"), deletingPod("c"))},
			want{write: true, expected: 3, desired: 1, healthy: 2, allowed: 1, reason: policyv1.SufficientPodsReason}},
		{"status already right: no write",
			State{PDB: budget(num(2), nil, current(3, 2, 3, 1)), Pods: three},
			want{write: false, expected: 3, desired: 2, healthy: 3, allowed: 1, reason: policyv1.SufficientPodsReason}},
		{"spec changed since: observedGeneration catches up",
			State{PDB: budget(num(2), nil, current(3, 2, 3, 1), func(p *policyv1.PodDisruptionBudget) { p.Generation = 2 }), Pods: three},
			want{write: true, expected: 3, desired: 2, healthy: 3, allowed: 1, reason: policyv1.SufficientPodsReason}},
		{"a stale SyncFailed condition is replaced",
			State{PDB: budget(num(2), nil, func(p *policyv1.PodDisruptionBudget) {
				p.Status = *failSafe(p, errors.New("x"), now)
				p.Status.ObservedGeneration, p.Status.ExpectedPods, p.Status.DesiredHealthy, p.Status.CurrentHealthy = 1, 3, 2, 3
			}), Pods: three},
			want{write: true, expected: 3, desired: 2, healthy: 3, allowed: 1, reason: policyv1.SufficientPodsReason}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.st.Now = now
			before := tt.st.PDB.DeepCopy()
			p := plan(tt.st)
			if (p.Status != nil) != tt.want.write {
				t.Fatalf("write = %v, want %v", p.Status != nil, tt.want.write)
			}
			if p.RecheckAfter != tt.want.recheck {
				t.Errorf("recheck after %v, want %v", p.RecheckAfter, tt.want.recheck)
			}
			var reasons []string
			for _, e := range p.Events {
				reasons = append(reasons, e.Reason)
			}
			if strings.Join(reasons, ",") != strings.Join(tt.want.events, ",") {
				t.Errorf("events %v, want %v", reasons, tt.want.events)
			}
			s := &tt.st.PDB.Status
			if p.Status != nil {
				s = p.Status
			}
			w := tt.want
			if s.ExpectedPods != w.expected || s.DesiredHealthy != w.desired || s.CurrentHealthy != w.healthy || s.DisruptionsAllowed != w.allowed {
				t.Errorf("expected/desired/healthy/allowed = %d/%d/%d/%d, want %d/%d/%d/%d",
					s.ExpectedPods, s.DesiredHealthy, s.CurrentHealthy, s.DisruptionsAllowed, w.expected, w.desired, w.healthy, w.allowed)
			}
			c := apimeta.FindStatusCondition(s.Conditions, policyv1.DisruptionAllowedCondition)
			if c == nil || c.Reason != w.reason || !strings.Contains(c.Message, w.message) {
				t.Errorf("DisruptionAllowed = %+v, want reason %s, message with %q", c, w.reason, w.message)
			} else if wantStatus := metav1.ConditionStatus(map[bool]string{true: "True", false: "False"}[w.allowed > 0]); c.Status != wantStatus {
				t.Errorf("DisruptionAllowed status %s, want %s", c.Status, wantStatus)
			}
			if w.reason != policyv1.SyncFailedReason && s.ObservedGeneration != tt.st.PDB.Generation {
				t.Errorf("observedGeneration %d, want %d", s.ObservedGeneration, tt.st.PDB.Generation)
			}
			var names []string
			for n := range s.DisruptedPods {
				names = append(names, n)
			}
			if strings.Join(names, ",") != strings.Join(w.disrupted, ",") {
				t.Errorf("disruptedPods %v, want %v", names, w.disrupted)
			}
			if !equality.Semantic.DeepEqual(before, tt.st.PDB) {
				t.Error("plan changed the budget it was given")
			}
		})
	}
}

func TestStaleDisruption(t *testing.T) {
	cond := func(status corev1.ConditionStatus, reason string, age time.Duration) *corev1.Pod {
		p := readyPod("a")
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: status,
			Reason: reason, LastTransitionTime: metav1.NewTime(now.Add(-age))})
		return p
	}
	terminal := cond(corev1.ConditionTrue, "EvictionByEvictionAPI", time.Hour)
	terminal.Status.Phase = corev1.PodFailed
	deleting := cond(corev1.ConditionTrue, "EvictionByEvictionAPI", time.Hour)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	for _, tt := range []struct {
		name  string
		pod   *corev1.Pod
		stale bool
		after time.Duration
	}{
		{"no condition", readyPod("a"), false, 0},
		{"evicted 30s ago: look again in 90s", cond(corev1.ConditionTrue, "EvictionByEvictionAPI", 30*time.Second), true, 90 * time.Second},
		{"evicted 3m ago and still here: reset now", cond(corev1.ConditionTrue, "EvictionByEvictionAPI", 3*time.Minute), true, 0},
		{"already False", cond(corev1.ConditionFalse, "", time.Hour), false, 0},
		{"set by the node agent: never stale", cond(corev1.ConditionTrue, corev1.PodReasonTerminationByKubelet, time.Hour), false, 0},
		{"terminal pod", terminal, false, 0},
		{"being deleted", deleting, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stale, after := staleDisruption(tt.pod, now, DefaultStalePodDisruptionTimeout)
			if stale != tt.stale || after != tt.after {
				t.Errorf("stale, after = %v, %v; want %v, %v", stale, after, tt.stale, tt.after)
			}
		})
	}
}
