package nodelifecycle

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPlan is the node lifecycle controller's decision, State → Plan. The
// node "n" was created an hour before t0, posted Ready at t0 and is looked
// at at t0+now.
func TestPlan(t *testing.T) {
	settings := Settings{GracePeriod: 40 * time.Second, StartupGracePeriod: 60 * time.Second,
		UnhealthyZoneThreshold: DefaultUnhealthyZoneThreshold, Rates: rates{qps: 0.1, secondaryQPS: 0.01, largeClusterThreshold: 50}}
	secs := func(n int64) *int64 { return &n }
	pod := func(name string, ready corev1.ConditionStatus, tols ...corev1.Toleration) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}, Spec: corev1.PodSpec{NodeName: "n", Tolerations: tols}}
		if ready != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
		}
		return p
	}
	unreachableFor := func(s *int64) corev1.Toleration {
		return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: s}
	}
	deleting := pod("deleting", corev1.ConditionFalse)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	ns := func(k string) corev1.Taint { return corev1.Taint{Key: k, Effect: corev1.TaintEffectNoSchedule} }
	ne := func(k string) corev1.Taint { return corev1.Taint{Key: k, Effect: corev1.TaintEffectNoExecute} }
	// unknown is a node the controller marked Unknown at t0+41s.
	unknown := func(taints ...corev1.Taint) *corev1.Node {
		n := nodeWith(corev1.ConditionTrue, 0, taints...)
		markUnknown(n, t0.Add(41*time.Second))
		return n
	}
	oneOtherReady := map[string]readyCounts{"": {ready: 1}}
	full := *newBucket(t0)
	empty := bucket{tokens: 0, last: t0.Add(50 * time.Second)} // a token in 10 s at 0.1/s

	type want struct {
		status         corev1.ConditionStatus // of the Ready condition written; "" none written
		ready          corev1.ConditionStatus
		all            bool
		added, removed []string
		token          bool
		mark, evict    []string
		requeue        bool
		after          time.Duration
	}
	tests := []struct {
		name  string
		state State
		want  want
	}{
		{"healthy: looked at again when the grace period would end",
			State{Node: nodeWith(corev1.ConditionTrue, 0), Now: t0.Add(10 * time.Second), Probe: t0, LastReady: corev1.ConditionTrue,
				OtherNodes: oneOtherReady, Bucket: full, Pods: []*corev1.Pod{pod("a", corev1.ConditionTrue)}},
			want{ready: corev1.ConditionTrue, after: 30*time.Second + time.Millisecond}},
		{"cache behind the controller's own write: look again, nothing else",
			State{Node: nodeWith(corev1.ConditionTrue, 0), Now: t0.Add(time.Hour), Behind: true},
			want{requeue: true}},
		{"silent past the grace period: Unknown, unreachable taints, pods marked, untolerating pod evicted",
			State{Node: nodeWith(corev1.ConditionTrue, 0), Now: t0.Add(41 * time.Second), Probe: t0, LastReady: corev1.ConditionTrue,
				OtherNodes: oneOtherReady, Bucket: full, Pods: []*corev1.Pod{
					pod("plain", corev1.ConditionTrue),
					pod("brief", corev1.ConditionTrue, unreachableFor(secs(300))),
					pod("patient", corev1.ConditionTrue, unreachableFor(nil)),
					pod("unready", corev1.ConditionFalse),
					pod("no-condition", ""),
					deleting,
				}},
			want{status: corev1.ConditionUnknown, ready: corev1.ConditionUnknown, token: true,
				added: []string{"unreachable:NoExecute", "unreachable:NoSchedule"},
				mark:  []string{"brief", "patient", "plain"}, evict: []string{"no-condition", "plain", "unready"}, after: 300*time.Second + time.Millisecond}},
		{"silent, never posted Ready: counted from creation with the startup grace period",
			State{Node: nodeWith("", 0), Now: t0, Probe: t0.Add(-time.Hour), OtherNodes: oneOtherReady, Bucket: full},
			want{status: corev1.ConditionUnknown, ready: corev1.ConditionUnknown, token: true,
				added: []string{"unreachable:NoExecute", "unreachable:NoSchedule"}}},
		{"silent and the only node: full disruption, no NoExecute taint, nobody evicted",
			State{Node: nodeWith(corev1.ConditionTrue, 0), Now: t0.Add(41 * time.Second), Probe: t0, LastReady: corev1.ConditionTrue,
				Bucket: full, Pods: []*corev1.Pod{pod("plain", corev1.ConditionTrue)}},
			want{status: corev1.ConditionUnknown, ready: corev1.ConditionUnknown, all: true,
				added: []string{"unreachable:NoSchedule"}, mark: []string{"plain"}}},
		{"no token left in the zone: NoSchedule now, NoExecute when one comes",
			State{Node: unknown(), Now: t0.Add(50 * time.Second), Probe: t0,
				OtherNodes: oneOtherReady, Bucket: empty, Pods: []*corev1.Pod{pod("plain", corev1.ConditionFalse)}},
			want{ready: corev1.ConditionUnknown, added: []string{"unreachable:NoSchedule"}, after: 10 * time.Second}},
		{"small partially disrupted zone: no NoExecute taint, looked at again",
			State{Node: unknown(ns(corev1.TaintNodeUnreachable)), Now: t0.Add(50 * time.Second), Probe: t0,
				OtherNodes: map[string]readyCounts{"": {ready: 1, notReady: 3}}, Bucket: full},
			want{ready: corev1.ConditionUnknown, after: retryPeriod}},
		{"reports NotReady, was Ready: not-ready taints, pods marked once",
			State{Node: nodeWith(corev1.ConditionFalse, 0), Now: t0.Add(time.Second), Probe: t0, LastReady: corev1.ConditionTrue,
				OtherNodes: oneOtherReady, Bucket: full, Pods: []*corev1.Pod{pod("a", corev1.ConditionTrue, corev1.Toleration{Operator: corev1.TolerationOpExists})}},
			want{ready: corev1.ConditionFalse, token: true, added: []string{"not-ready:NoExecute", "not-ready:NoSchedule"},
				mark: []string{"a"}, after: 39*time.Second + time.Millisecond}},
		{"still NotReady: its kubelet manages the pods",
			State{Node: nodeWith(corev1.ConditionFalse, 0, ns(corev1.TaintNodeNotReady), ne(corev1.TaintNodeNotReady)), Now: t0.Add(time.Second), Probe: t0,
				LastReady: corev1.ConditionFalse, OtherNodes: oneOtherReady, Bucket: full,
				Pods: []*corev1.Pod{pod("a", corev1.ConditionTrue, corev1.Toleration{Operator: corev1.TolerationOpExists})}},
			want{ready: corev1.ConditionFalse, after: 39*time.Second + time.Millisecond}},
		{"Unknown: a pod marked already and Ready again is not rewritten",
			State{Node: unknown(ns(corev1.TaintNodeUnreachable), ne(corev1.TaintNodeUnreachable)), Now: t0.Add(50 * time.Second), Probe: t0,
				LastReady: corev1.ConditionUnknown, Marked: map[types.UID]bool{"old": true}, OtherNodes: oneOtherReady, Bucket: full,
				TaintStarts: map[string]time.Time{corev1.TaintNodeUnreachable: t0.Add(41 * time.Second)},
				Pods:        []*corev1.Pod{pod("old", corev1.ConditionTrue, unreachableFor(nil)), pod("new", corev1.ConditionTrue, unreachableFor(secs(60)))}},
			want{ready: corev1.ConditionUnknown, mark: []string{"new"}, after: 51*time.Second + time.Millisecond}},
		{"toleration ran out since the taint was first seen: evicted",
			State{Node: unknown(ns(corev1.TaintNodeUnreachable), ne(corev1.TaintNodeUnreachable)), Now: t0.Add(time.Hour), Probe: t0,
				LastReady: corev1.ConditionUnknown, OtherNodes: oneOtherReady, Bucket: full,
				TaintStarts: map[string]time.Time{corev1.TaintNodeUnreachable: t0.Add(41 * time.Second)},
				Pods:        []*corev1.Pod{pod("brief", corev1.ConditionFalse, unreachableFor(secs(60))), deleting}},
			want{ready: corev1.ConditionUnknown, evict: []string{"brief"}}},
		{"Ready again: its taints go",
			State{Node: nodeWith(corev1.ConditionTrue, 50*time.Second, ns(corev1.TaintNodeUnreachable), ne(corev1.TaintNodeUnreachable)), Now: t0.Add(50 * time.Second),
				Probe: t0.Add(50 * time.Second), LastReady: corev1.ConditionUnknown, OtherNodes: oneOtherReady, Bucket: full,
				Pods: []*corev1.Pod{pod("a", corev1.ConditionTrue)}},
			want{ready: corev1.ConditionTrue, removed: []string{"unreachable:NoExecute", "unreachable:NoSchedule"}, after: 40*time.Second + time.Millisecond}},
	}
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.state
			s.Settings = settings
			p := plan(s)
			var status corev1.ConditionStatus
			if p.Status != nil {
				status = readyStatus(p.Status)
			}
			got := want{status: status, ready: p.Ready, all: p.AllDisrupted, added: taintNames(p.Added), removed: taintNames(p.Removed),
				token: p.TakeToken, mark: names(p.MarkNotReady), evict: names(p.Evict), requeue: p.Result.Requeue, after: p.Result.RequeueAfter}
			w := tt.want
			if got.status != w.status || got.ready != w.ready || got.all != w.all || got.token != w.token || got.requeue != w.requeue || got.after != w.after ||
				!slices.Equal(got.added, w.added) || !slices.Equal(got.removed, w.removed) || !slices.Equal(got.mark, w.mark) || !slices.Equal(got.evict, w.evict) {
				t.Errorf("plan:\n got %+v\nwant %+v", got, w)
			}
			if p.Taints != nil {
				for _, taint := range p.Taints {
					if slices.ContainsFunc(p.Added, func(a corev1.Taint) bool { return a.Key == taint.Key && a.Effect == taint.Effect }) &&
						(taint.TimeAdded == nil || !taint.TimeAdded.Time.Equal(s.Now)) {
						t.Errorf("added taint %s without timeAdded now: %v", taint.Key, taint.TimeAdded)
					}
				}
			}
		})
	}
}
