package daemonset

import (
	"maps"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"plainkube.dev/plainkube/internal/controller/history"
)

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func TestShouldRun(t *testing.T) {
	base := corev1.PodSpec{}
	AddDefaultTolerations(&base)
	withSelector := *base.DeepCopy()
	withSelector.NodeSelector = map[string]string{"disk": "ssd"}
	withAffinity := *base.DeepCopy()
	withAffinity.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
	tolerating := *base.DeepCopy()
	tolerating.Tolerations = append(tolerating.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
	named := *base.DeepCopy()
	named.NodeName = "other"
	for _, tc := range []struct {
		name               string
		node               *corev1.Node
		spec               corev1.PodSpec
		run, continueToRun bool
	}{
		{"plain node", node("n", nil), base, true, true},
		{"selector matches", node("n", map[string]string{"disk": "ssd"}), withSelector, true, true},
		{"selector does not match", node("n", nil), withSelector, false, false},
		{"affinity matches", node("n", map[string]string{"zone": "a"}), withAffinity, true, true},
		{"affinity does not match", node("n", map[string]string{"zone": "b"}), withAffinity, false, false},
		{"NoSchedule taint", node("n", nil, corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}), base, false, true},
		{"NoExecute taint", node("n", nil, corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}), base, false, false},
		{"tolerated taint", node("n", nil, corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}), tolerating, true, true},
		{"PreferNoSchedule ignored", node("n", nil, corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}), base, true, true},
		{"default toleration: unschedulable", node("n", nil, corev1.Taint{Key: TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}), base, true, true},
		{"default toleration: not ready", node("n", nil, corev1.Taint{Key: TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}), base, true, true},
		{"network unavailable without host network", node("n", nil, corev1.Taint{Key: TaintNodeNetworkUnavailable, Effect: corev1.TaintEffectNoSchedule}), base, false, true},
		{"nodeName elsewhere", node("n", nil), named, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, cont := ShouldRun(tc.node, &tc.spec)
			if run != tc.run || cont != tc.continueToRun {
				t.Errorf("ShouldRun = %v, %v; want %v, %v", run, cont, tc.run, tc.continueToRun)
			}
		})
	}
}

func TestDefaultTolerations(t *testing.T) {
	spec := corev1.PodSpec{HostNetwork: true, Tolerations: []corev1.Toleration{
		{Key: TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}}}
	AddDefaultTolerations(&spec)
	if len(spec.Tolerations) != 7 {
		t.Fatalf("tolerations: %v", spec.Tolerations)
	}
	if spec.Tolerations[0].TolerationSeconds == nil {
		t.Errorf("the pod's own toleration was replaced")
	}
}

func TestPinToNodeAndTargetNode(t *testing.T) {
	spec := corev1.PodSpec{}
	PinToNode(&spec, "n1")
	if got := TargetNode(&corev1.Pod{Spec: spec}); got != "n1" {
		t.Errorf("TargetNode = %q", got)
	}
	if got := TargetNode(&corev1.Pod{Spec: corev1.PodSpec{NodeName: "n2"}}); got != "n2" {
		t.Errorf("TargetNode = %q", got)
	}
}

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func pod(name, hash string, age time.Duration, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(now.Add(-age)),
		Labels:            map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hash}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-age))}}
	}
	return p
}

func names(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestPlanNode(t *testing.T) {
	failed := pod("failed", "new", time.Minute, false)
	failed.Status.Phase = corev1.PodFailed
	deleting := pod("deleting", "new", time.Minute, true)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	for _, tc := range []struct {
		name       string
		run, cont  bool
		pods       []*corev1.Pod
		create     bool
		deleteWant []string
	}{
		{"no pod", true, true, nil, true, nil},
		{"one pod", true, true, []*corev1.Pod{pod("a", "new", time.Minute, true)}, false, nil},
		{"extra pods: oldest stays", true, true, []*corev1.Pod{pod("young", "new", time.Second, true), pod("old", "new", time.Hour, true)}, false, []string{"young"}},
		{"old and new both stay (surge)", true, true, []*corev1.Pod{pod("o", "old", time.Hour, true), pod("n", "new", time.Second, false)}, false, nil},
		{"failed pod deleted", true, true, []*corev1.Pod{failed}, false, []string{"failed"}},
		{"terminating pod: wait", true, true, []*corev1.Pod{deleting}, false, nil},
		{"must not run: delete", false, false, []*corev1.Pod{pod("a", "new", time.Minute, true), deleting}, false, []string{"a"}},
		{"NoSchedule taint: stays", false, true, []*corev1.Pod{pod("a", "new", time.Minute, true)}, false, nil},
		{"NoSchedule taint: none created", false, true, nil, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanNode(tc.run, tc.cont, tc.pods, "new")
			if p.Create != tc.create || len(p.Delete) != len(tc.deleteWant) {
				t.Fatalf("plan create=%v delete=%v", p.Create, names(p.Delete))
			}
			for i, n := range names(p.Delete) {
				if n != tc.deleteWant[i] {
					t.Errorf("delete %v, want %v", names(p.Delete), tc.deleteWant)
				}
			}
		})
	}
}

func TestPlanRollingUpdate(t *testing.T) {
	old := func(n string, ready bool) NodePods {
		return NodePods{Node: n, Old: []*corev1.Pod{pod(n+"-old", "old", time.Hour, ready)}}
	}
	both := func(n string, ready bool) NodePods {
		return NodePods{Node: n, Old: []*corev1.Pod{pod(n+"-old", "old", time.Hour, true)}, New: []*corev1.Pod{pod(n+"-new", "new", time.Second, ready)}}
	}
	updated := NodePods{Node: "u", New: []*corev1.Pod{pod("u-new", "new", time.Hour, true)}}
	for _, tc := range []struct {
		name         string
		nodes        []NodePods
		unavail, sur int
		del, surge   []string
	}{
		{"maxUnavailable 1", []NodePods{old("a", true), old("b", true), old("c", true)}, 1, 0, []string{"a-old"}, nil},
		{"maxUnavailable 2", []NodePods{old("a", true), old("b", true), old("c", true)}, 2, 0, []string{"a-old", "b-old"}, nil},
		{"one updating already", []NodePods{{Node: "a"}, old("b", true), old("c", true)}, 1, 0, nil, nil},
		{"unavailable old replaced at once", []NodePods{old("a", false), old("b", true), updated}, 1, 0, []string{"a-old"}, nil},
		{"surge 1", []NodePods{old("a", true), old("b", true)}, 0, 1, nil, []string{"a"}},
		{"surge: new not ready yet", []NodePods{both("a", false), old("b", true)}, 0, 1, nil, nil},
		{"surge: new available, old goes, next surges", []NodePods{both("a", true), old("b", true)}, 0, 1, []string{"a-old"}, []string{"b"}},
		{"surge: unavailable old replaced", []NodePods{old("a", false)}, 0, 1, []string{"a-old"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanRollingUpdate(tc.nodes, tc.unavail, tc.sur, 0, now)
			if got, want := names(p.Delete), tc.del; len(got) != len(want) || len(got) > 0 && got[0] != want[0] {
				t.Errorf("delete %v, want %v", got, want)
			}
			if len(p.SurgeNodes) != len(tc.surge) || len(tc.surge) > 0 && p.SurgeNodes[0] != tc.surge[0] {
				t.Errorf("surge %v, want %v", p.SurgeNodes, tc.surge)
			}
		})
	}
}

func TestMaxUnavailableSurge(t *testing.T) {
	ds := &appsv1.DaemonSet{}
	if mu, ms := MaxUnavailableSurge(ds, 10); mu != 1 || ms != 0 {
		t.Errorf("default: %d %d", mu, ms)
	}
	pct := intstr.FromString("25%")
	zero := intstr.FromInt32(0)
	ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &zero, MaxSurge: &pct}
	if mu, ms := MaxUnavailableSurge(ds, 10); mu != 0 || ms != 3 {
		t.Errorf("surge 25%% of 10: %d %d", mu, ms)
	}
}

func TestRevisionHash(t *testing.T) {
	a, _ := history.RevisionData(&corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x:1"}}}})
	b, _ := history.RevisionData(&corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x:2"}}}})
	if history.HashRevision(a, nil) == history.HashRevision(b, nil) || history.HashRevision(a, nil) == history.HashRevision(a, ptr.To[int32](1)) {
		t.Error("hashes collide")
	}
	if !history.SameRevisionData(a, a) || history.SameRevisionData(a, b) {
		t.Error("SameRevisionData")
	}
}

func TestPlan(t *testing.T) {
	on := func(p *corev1.Pod, n string) *corev1.Pod { p.Spec.NodeName = n; return p }
	ds := func(mutate ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
		d := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{
			Template:       corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: map[string]string{"role": "worker"}}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}}}
		for _, m := range mutate {
			m(d)
		}
		return d
	}
	worker := map[string]string{"role": "worker"}
	tests := []struct {
		name         string
		ds           *appsv1.DaemonSet
		pods         []*corev1.Pod
		nodes        []*corev1.Node
		unsettled    bool
		create       []string
		delete       []string
		runs         map[string]bool
		requeueAfter time.Duration
	}{
		{name: "a pod on each node it may run on", ds: ds(),
			nodes:  []*corev1.Node{node("b", worker), node("a", worker), node("c", nil)},
			create: []string{"a", "b"}, runs: map[string]bool{"a": true, "b": true, "c": false}},
		{name: "a pod where it may no longer run goes, as does one on a node gone", ds: ds(),
			pods:   []*corev1.Pod{on(pod("pa", "new", time.Hour, true), "a"), on(pod("pc", "new", time.Hour, true), "c"), on(pod("pgone", "new", time.Hour, true), "gone")},
			nodes:  []*corev1.Node{node("a", worker), node("c", nil)},
			delete: []string{"pc", "pgone"}, runs: map[string]bool{"a": true, "c": false}},
		{name: "rolling update: one old pod at a time", ds: ds(),
			pods:   []*corev1.Pod{on(pod("pa", "old", time.Hour, true), "a"), on(pod("pb", "old", time.Hour, true), "b")},
			nodes:  []*corev1.Node{node("a", worker), node("b", worker)},
			delete: []string{"pa"}, runs: map[string]bool{"a": true, "b": true}},
		{name: "OnDelete replaces nothing",
			ds:    ds(func(d *appsv1.DaemonSet) { d.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType }),
			pods:  []*corev1.Pod{on(pod("pa", "old", time.Hour, true), "a")},
			nodes: []*corev1.Node{node("a", worker)}, runs: map[string]bool{"a": true}},
		{name: "expectations outstanding: nothing managed", ds: ds(), unsettled: true,
			nodes: []*corev1.Node{node("a", worker)}, runs: map[string]bool{"a": true}},
		{name: "minReadySeconds: look again once ready pods are available",
			ds:    ds(func(d *appsv1.DaemonSet) { d.Spec.MinReadySeconds = 5 }),
			pods:  []*corev1.Pod{on(pod("pa", "new", time.Hour, true), "a")},
			nodes: []*corev1.Node{node("a", worker)}, runs: map[string]bool{"a": true}, requeueAfter: 6 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan(State{DaemonSet: tt.ds, Hash: "new", Pods: tt.pods, Nodes: tt.nodes, Satisfied: !tt.unsettled, Now: now})
			if p.Manage == tt.unsettled {
				t.Errorf("Manage = %v", p.Manage)
			}
			if !slices.Equal(p.Create, tt.create) {
				t.Errorf("create %v, want %v", p.Create, tt.create)
			}
			got := names(p.Delete)
			slices.Sort(got)
			if !slices.Equal(got, tt.delete) {
				t.Errorf("delete %v, want %v", got, tt.delete)
			}
			if !maps.Equal(p.Runs, tt.runs) {
				t.Errorf("runs %v, want %v", p.Runs, tt.runs)
			}
			if p.RequeueAfter != tt.requeueAfter {
				t.Errorf("requeueAfter %v, want %v", p.RequeueAfter, tt.requeueAfter)
			}
		})
	}
}
