package podgc

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func pod(name, node string, phase corev1.PodPhase, created time.Duration, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(t0.Add(created))},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func deleting(p *corev1.Pod) {
	now := metav1.NewTime(t0)
	p.DeletionTimestamp = &now
}

func evicted(p *corev1.Pod) { p.Status.Reason = "Evicted" }

func node(name string, ready bool, taints ...string) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
	for _, k := range taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffectNoExecute})
	}
	return n
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestPlan(t *testing.T) {
	nodes := map[string]*corev1.Node{
		"up":   node("up", true),
		"down": node("down", false),
		"oos":  node("oos", false, corev1.TaintNodeOutOfService),
	}
	pods := []*corev1.Pod{
		pod("running", "up", corev1.PodRunning, 0),
		pod("orphan-b", "gone", corev1.PodRunning, 2*time.Second),
		pod("orphan-a", "gone", corev1.PodRunning, time.Second),
		pod("orphan-new", "just-gone", corev1.PodRunning, 0),
		pod("unscheduled-deleting", "", corev1.PodPending, 0, deleting),
		pod("unscheduled", "", corev1.PodPending, 0),
		pod("deleting-on-oos", "oos", corev1.PodRunning, 0, deleting),
		pod("deleting-on-down", "down", corev1.PodRunning, 0, deleting),
		pod("running-on-oos", "oos", corev1.PodRunning, 0),
		pod("done-3", "up", corev1.PodSucceeded, 3*time.Second),
		pod("done-1", "up", corev1.PodSucceeded, time.Second),
		pod("failed-2", "up", corev1.PodFailed, 2*time.Second),
		pod("evicted-9", "up", corev1.PodFailed, 9*time.Second, evicted),
	}
	d := plan(State{
		Pods:                pods,
		Nodes:               nodes,
		MissingSince:        map[string]time.Time{"gone": t0, "forgotten": t0},
		Now:                 t0.Add(time.Minute),
		Quarantine:          40 * time.Second,
		TerminatedThreshold: 2,
	})
	if got := names(d.Orphaned["gone"]); !slices.Equal(got, []string{"orphan-a", "orphan-b"}) || len(d.Orphaned) != 1 {
		t.Errorf("orphaned %v", d.Orphaned)
	}
	if len(d.MissingSince) != 2 || !d.MissingSince["gone"].Equal(t0) || !d.MissingSince["just-gone"].Equal(t0.Add(time.Minute)) {
		t.Errorf("missingSince %v", d.MissingSince)
	}
	if !d.NextQuarantineEnd.Equal(t0.Add(time.Minute + 40*time.Second)) {
		t.Errorf("next quarantine end %v", d.NextQuarantineEnd)
	}
	if got := names(d.UnscheduledTerminating); !slices.Equal(got, []string{"unscheduled-deleting"}) {
		t.Errorf("unscheduled terminating %v", got)
	}
	if got := names(d.TerminatingOutOfService); !slices.Equal(got, []string{"deleting-on-oos"}) {
		t.Errorf("terminating out of service %v", got)
	}
	// 4 terminated, keep 2: the evicted one first, then the oldest.
	if got := names(d.Terminated); !slices.Equal(got, []string{"evicted-9", "done-1"}) {
		t.Errorf("terminated %v", got)
	}

	// Quarantine not over yet; no threshold.
	d = plan(State{Pods: pods, Nodes: nodes, MissingSince: map[string]time.Time{"gone": t0}, Now: t0.Add(39 * time.Second), Quarantine: 40 * time.Second})
	if len(d.Orphaned) != 0 || len(d.Terminated) != 0 || !d.NextQuarantineEnd.Equal(t0.Add(40*time.Second)) {
		t.Errorf("during quarantine: %+v", d)
	}
}
