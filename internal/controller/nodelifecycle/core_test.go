package nodelifecycle

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func nodeWith(ready corev1.ConditionStatus, heartbeat time.Duration, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))}}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready,
			LastHeartbeatTime: metav1.NewTime(t0.Add(heartbeat)), LastTransitionTime: metav1.NewTime(t0)}}
	}
	n.Spec.Taints = taints
	return n
}

func leaseAt(d time.Duration) *coordinationv1.Lease {
	at := metav1.NewMicroTime(t0.Add(d))
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &at}}
}

func TestObserve(t *testing.T) {
	// A sequence of looks; probe is when the controller last saw a sign of
	// life.
	type look struct {
		node  *corev1.Node
		lease *coordinationv1.Lease
		at    time.Duration
		probe time.Duration
	}
	tests := []struct {
		name  string
		looks []look
	}{
		{"first look gives a full grace period", []look{{nodeWith(corev1.ConditionTrue, 0), nil, 10 * time.Second, 10 * time.Second}}},
		{"never posted status: counts from creation", []look{{nodeWith("", 0), nil, 10 * time.Second, -time.Hour}}},
		{"same heartbeat, no lease: probe stays", []look{
			{nodeWith(corev1.ConditionTrue, 0), nil, 0, 0},
			{nodeWith(corev1.ConditionTrue, 0), nil, 30 * time.Second, 0},
		}},
		{"new heartbeat refreshes", []look{
			{nodeWith(corev1.ConditionTrue, 0), nil, 0, 0},
			{nodeWith(corev1.ConditionTrue, 20*time.Second), nil, 25 * time.Second, 25 * time.Second},
		}},
		{"renewed lease refreshes, same lease does not", []look{
			{nodeWith(corev1.ConditionTrue, 0), leaseAt(0), 0, 0},
			{nodeWith(corev1.ConditionTrue, 0), leaseAt(10 * time.Second), 12 * time.Second, 12 * time.Second},
			{nodeWith(corev1.ConditionTrue, 0), leaseAt(10 * time.Second), 50 * time.Second, 12 * time.Second},
		}},
		{"ready condition appears", []look{
			{nodeWith("", 0), nil, 0, -time.Hour},
			{nodeWith(corev1.ConditionTrue, 0), nil, 5 * time.Second, 5 * time.Second},
		}},
	}
	for _, tt := range tests {
		var h *health
		for i, l := range tt.looks {
			h = observe(h, l.node, l.lease, t0.Add(l.at))
			if !h.probe.Equal(t0.Add(l.probe)) {
				t.Errorf("%s, look %d: probe %v, want %v", tt.name, i, h.probe.Sub(t0), l.probe)
			}
		}
	}
}

func TestMarkUnknown(t *testing.T) {
	n := nodeWith(corev1.ConditionTrue, 0)
	n.Status.Conditions = append(n.Status.Conditions,
		corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
		corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse})
	now := t0.Add(time.Minute)
	if !markUnknown(n, now) {
		t.Fatal("nothing changed")
	}
	want := map[corev1.NodeConditionType]string{
		corev1.NodeReady:              "Unknown/NodeStatusUnknown",
		corev1.NodeMemoryPressure:     "Unknown/NodeStatusUnknown",
		corev1.NodeDiskPressure:       "Unknown/NodeStatusNeverUpdated",
		corev1.NodePIDPressure:        "Unknown/NodeStatusNeverUpdated",
		corev1.NodeNetworkUnavailable: "False/",
	}
	for typ, w := range want {
		c := getCondition(n.Status.Conditions, typ)
		if c == nil || string(c.Status)+"/"+c.Reason != w {
			t.Errorf("%s: %+v, want %s", typ, c, w)
		}
	}
	r := readyCondition(n)
	if r.Message != "Kubelet stopped posting node status." || !r.LastTransitionTime.Time.Equal(now) || !r.LastHeartbeatTime.Time.Equal(t0) {
		t.Errorf("ready %+v", r)
	}
	if markUnknown(n, now.Add(time.Minute)) {
		t.Error("second mark changed something")
	}
}

func taintNames(ts []corev1.Taint) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Key[len("node.kubernetes.io/"):]+":"+string(t.Effect))
	}
	slices.Sort(out)
	return out
}

func TestDecideTaints(t *testing.T) {
	ns := func(k string) corev1.Taint { return corev1.Taint{Key: k, Effect: corev1.TaintEffectNoSchedule} }
	ne := func(k string) corev1.Taint { return corev1.Taint{Key: k, Effect: corev1.TaintEffectNoExecute} }
	tests := []struct {
		name         string
		node         *corev1.Node
		allDisrupted bool
		add, remove  []string
		noExecute    string
	}{
		{"healthy, untainted", nodeWith(corev1.ConditionTrue, 0), false, nil, nil, ""},
		{"unknown: unreachable NoSchedule now, NoExecute rate limited", nodeWith(corev1.ConditionUnknown, 0), false,
			[]string{"unreachable:NoSchedule"}, nil, "unreachable"},
		{"not ready", nodeWith(corev1.ConditionFalse, 0), false, []string{"not-ready:NoSchedule"}, nil, "not-ready"},
		{"unknown after not ready: swapped at once", nodeWith(corev1.ConditionUnknown, 0, ns(corev1.TaintNodeNotReady), ne(corev1.TaintNodeNotReady)), false,
			[]string{"unreachable:NoExecute", "unreachable:NoSchedule"}, []string{"not-ready:NoExecute", "not-ready:NoSchedule"}, ""},
		{"back to ready: untainted", nodeWith(corev1.ConditionTrue, 0, ns(corev1.TaintNodeUnreachable), ne(corev1.TaintNodeUnreachable), ns("example.com/other")), false,
			nil, []string{"unreachable:NoExecute", "unreachable:NoSchedule"}, ""},
		{"already tainted: nothing", nodeWith(corev1.ConditionUnknown, 0, ns(corev1.TaintNodeUnreachable), ne(corev1.TaintNodeUnreachable)), false, nil, nil, ""},
		{"all zones disrupted: NoExecute removed, NoSchedule kept", nodeWith(corev1.ConditionUnknown, 0, ns(corev1.TaintNodeUnreachable), ne(corev1.TaintNodeUnreachable)), true,
			nil, []string{"unreachable:NoExecute"}, ""},
		{"no ready condition yet", nodeWith("", 0), false, nil, nil, ""},
	}
	for _, tt := range tests {
		ch := decideTaints(tt.node, tt.allDisrupted)
		if got := taintNames(ch.add); !slices.Equal(got, tt.add) {
			t.Errorf("%s: add %v, want %v", tt.name, got, tt.add)
		}
		if got := taintNames(ch.remove); !slices.Equal(got, tt.remove) {
			t.Errorf("%s: remove %v, want %v", tt.name, got, tt.remove)
		}
		gotNE := ""
		if ch.noExecute != nil {
			gotNE = ch.noExecute.Key[len("node.kubernetes.io/"):]
		}
		if gotNE != tt.noExecute {
			t.Errorf("%s: rate-limited NoExecute %q, want %q", tt.name, gotNE, tt.noExecute)
		}
	}

	// Conditions and unschedulable.
	n := nodeWith(corev1.ConditionTrue, 0)
	n.Spec.Unschedulable = true
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue})
	if got := taintNames(decideTaints(n, false).add); !slices.Equal(got, []string{"disk-pressure:NoSchedule", "unschedulable:NoSchedule"}) {
		t.Errorf("pressure and unschedulable: %v", got)
	}
}

func TestApplyTaints(t *testing.T) {
	old := metav1.NewTime(t0)
	in := []corev1.Taint{
		{Key: "a", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &old},
		{Key: "b", Effect: corev1.TaintEffectNoExecute},
	}
	now := t0.Add(time.Minute)
	out := applyTaints(in, []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "c", Effect: corev1.TaintEffectNoExecute}},
		[]corev1.Taint{{Key: "b", Effect: corev1.TaintEffectNoExecute}}, now)
	if len(out) != 2 || out[0].Key != "a" || !out[0].TimeAdded.Time.Equal(t0) || out[1].Key != "c" || !out[1].TimeAdded.Time.Equal(now) {
		t.Errorf("%+v", out)
	}
}

func TestEvictionTime(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	noSchedule := corev1.Taint{Key: "x", Effect: corev1.TaintEffectNoSchedule}
	start := func(t corev1.Taint) time.Time {
		if t.Key == corev1.TaintNodeNotReady {
			return t0.Add(10 * time.Second)
		}
		return t0
	}
	tol := func(key string, op corev1.TolerationOperator, effect corev1.TaintEffect, s *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: op, Effect: effect, TolerationSeconds: s}
	}
	tests := []struct {
		name   string
		taints []corev1.Taint
		tols   []corev1.Toleration
		evict  bool
		at     time.Duration
	}{
		{"no NoExecute taint", []corev1.Taint{noSchedule}, nil, false, 0},
		{"not tolerated: now", []corev1.Taint{unreachable}, nil, true, -1},
		{"tolerated forever", []corev1.Taint{unreachable}, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, corev1.TolerationOpExists, corev1.TaintEffectNoExecute, nil)}, false, 0},
		{"tolerated for 300 s", []corev1.Taint{unreachable}, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, corev1.TolerationOpExists, corev1.TaintEffectNoExecute, secs(300))}, true, 300 * time.Second},
		{"negative seconds: at the start", []corev1.Taint{unreachable}, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, corev1.TolerationOpExists, "", secs(-5))}, true, 0},
		{"tolerate everything", []corev1.Taint{unreachable, notReady}, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, false, 0},
		{"one of two not tolerated", []corev1.Taint{unreachable, notReady}, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, corev1.TolerationOpExists, "", nil)}, true, -1},
		{"earliest deadline wins", []corev1.Taint{unreachable, notReady}, []corev1.Toleration{
			tol(corev1.TaintNodeUnreachable, corev1.TolerationOpExists, "", secs(60)),
			tol(corev1.TaintNodeNotReady, corev1.TolerationOpExists, "", secs(20)),
		}, true, 30 * time.Second},
		{"NoSchedule toleration does not count", []corev1.Taint{unreachable}, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, corev1.TolerationOpExists, corev1.TaintEffectNoSchedule, nil)}, true, -1},
		{"Equal needs the value", []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}}, []corev1.Toleration{{Key: "k", Value: "w"}}, true, -1},
		{"Equal with the value", []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}}, []corev1.Toleration{{Key: "k", Value: "v", Operator: corev1.TolerationOpEqual}}, false, 0},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tt.tols}}
		at, evict := evictionTime(pod, tt.taints, start)
		if evict != tt.evict {
			t.Errorf("%s: evict %v, want %v", tt.name, evict, tt.evict)
			continue
		}
		if tt.at == -1 {
			if !at.IsZero() {
				t.Errorf("%s: at %v, want now (zero)", tt.name, at)
			}
		} else if evict && !at.Equal(t0.Add(tt.at)) {
			t.Errorf("%s: at %v, want %v", tt.name, at.Sub(t0), tt.at)
		}
	}
}

func TestZones(t *testing.T) {
	mk := func(zone string, ready corev1.ConditionStatus, labels ...string) *corev1.Node {
		n := nodeWith(ready, 0)
		n.Labels = map[string]string{}
		if zone != "" {
			n.Labels[corev1.LabelTopologyZone] = zone
		}
		for _, l := range labels {
			n.Labels[l] = ""
		}
		return n
	}
	tests := []struct {
		name  string
		nodes []*corev1.Node
		want  map[string]ZoneState
		all   bool
	}{
		{"no nodes", nil, map[string]ZoneState{}, false},
		{"one dead node", []*corev1.Node{mk("", corev1.ConditionUnknown)}, map[string]ZoneState{"": StateFullDisruption}, true},
		{"one of two dead", []*corev1.Node{mk("", corev1.ConditionUnknown), mk("", corev1.ConditionTrue)}, map[string]ZoneState{"": StateNormal}, false},
		{"a dead zone among live ones", []*corev1.Node{mk("a", corev1.ConditionUnknown), mk("b", corev1.ConditionTrue)},
			map[string]ZoneState{":\x00:a": StateFullDisruption, ":\x00:b": StateNormal}, false},
		{"three of four dead: partial", []*corev1.Node{mk("", corev1.ConditionUnknown), mk("", corev1.ConditionFalse), mk("", ""), mk("", corev1.ConditionTrue)},
			map[string]ZoneState{"": StatePartialDisruption}, false},
		{"excluded nodes do not count", []*corev1.Node{mk("", corev1.ConditionUnknown), mk("", corev1.ConditionTrue, excludeDisruptionLabel)},
			map[string]ZoneState{"": StateFullDisruption}, true},
	}
	for _, tt := range tests {
		zones, all := zoneStates(tt.nodes, DefaultUnhealthyZoneThreshold)
		got := map[string]ZoneState{}
		for k, z := range zones {
			got[k] = z.state
		}
		if all != tt.all || len(got) != len(tt.want) {
			t.Errorf("%s: %v all=%v, want %v all=%v", tt.name, got, all, tt.want, tt.all)
			continue
		}
		for k, s := range tt.want {
			if got[k] != s {
				t.Errorf("%s: zone %q %s, want %s", tt.name, k, got[k], s)
			}
		}
	}

	r := rates{qps: 0.1, secondaryQPS: 0.01, largeClusterThreshold: 50}
	for _, tt := range []struct {
		z    zoneStats
		want float64
	}{
		{zoneStats{StateNormal, 3}, 0.1},
		{zoneStats{StateFullDisruption, 3}, 0.1},
		{zoneStats{StatePartialDisruption, 10}, 0},
		{zoneStats{StatePartialDisruption, 100}, 0.01},
	} {
		if got := taintQPS(tt.z, r); got != tt.want {
			t.Errorf("taintQPS(%+v) = %v, want %v", tt.z, got, tt.want)
		}
	}
}

func TestBucket(t *testing.T) {
	b := newBucket(t0)
	if ok, _ := b.take(t0, 0.1); !ok {
		t.Fatal("first token refused")
	}
	ok, wait := b.take(t0.Add(time.Second), 0.1)
	if ok || wait != 9*time.Second {
		t.Errorf("second take: %v, wait %v", ok, wait)
	}
	if ok, _ := b.take(t0.Add(10*time.Second), 0.1); !ok {
		t.Error("token not refilled after 10 s")
	}
	if ok, wait := b.take(t0.Add(time.Hour), 0); ok || wait != 0 {
		t.Error("zero rate gave a token")
	}
	b.refund()
	if ok, _ := b.take(t0.Add(time.Hour), 0.1); !ok {
		t.Error("refunded token refused")
	}
}
