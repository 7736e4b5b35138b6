package scheduler

import (
	"context"
	"errors"
	"math/rand"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
	"plainkube.dev/plainkube/internal/scheduler/plugins"
)

func defaultFramework(t testing.TB) *framework.Framework {
	t.Helper()
	f, err := framework.NewFramework(plugins.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// cluster schedules pods one after another, adding each placed pod to the
// cluster like the cache would.
type cluster struct {
	t     *testing.T
	f     *framework.Framework
	a     *Algorithm
	nodes []*v1.Node
	pods  []*v1.Pod
	pdbs  []*policyv1.PodDisruptionBudget
}

func newCluster(t *testing.T, nodes ...*v1.Node) *cluster {
	return &cluster{t: t, f: defaultFramework(t), a: NewAlgorithm(rand.New(rand.NewSource(1))), nodes: nodes}
}

func (c *cluster) decide(pod *v1.Pod) Decision {
	snap := framework.NewSnapshot(c.pods, c.nodes)
	snap.PDBs = c.pdbs
	return c.a.Decide(context.Background(), c.f, snap, pod)
}

// place schedules pod and binds it where it was decided; it returns the
// node ("" if it did not fit).
func (c *cluster) place(pod *v1.Pod) string {
	d := c.decide(pod)
	if d.Err != nil {
		return ""
	}
	pod.Spec.NodeName = d.Host
	c.pods = append(c.pods, pod)
	return d.Host
}

func TestPlacement(t *testing.T) {
	t.Run("nodeSelector", func(t *testing.T) {
		c := newCluster(t, st.Node("a").Obj(), st.Node("b").Label("disk", "ssd").Obj(), st.Node("c").Obj())
		for range 3 {
			if got := c.place(st.Pod("p").NodeSelector("disk", "ssd").Obj()); got != "b" {
				t.Fatalf("got %q, want b", got)
			}
		}
	})
	t.Run("resources", func(t *testing.T) {
		c := newCluster(t, st.Node("small").Capacity("1", "1Gi").Obj(), st.Node("big").Capacity("8", "16Gi").Obj())
		if got := c.place(st.Pod("p").Req("2", "1Gi").Obj()); got != "big" {
			t.Fatalf("got %q, want big", got)
		}
	})
	t.Run("least allocated spreads equal pods", func(t *testing.T) {
		c := newCluster(t, st.Node("a").Capacity("4", "8Gi").Obj(), st.Node("b").Capacity("4", "8Gi").Obj())
		first := c.place(st.Pod("p1").Req("1", "1Gi").Obj())
		second := c.place(st.Pod("p2").Req("1", "1Gi").Obj())
		if first == second || first == "" || second == "" {
			t.Fatalf("got %q and %q, want different nodes", first, second)
		}
	})
	t.Run("taints", func(t *testing.T) {
		c := newCluster(t,
			st.Node("cp").Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj(),
			st.Node("gpu").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
		)
		if got := c.place(st.Pod("p").Toleration("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj()); got != "gpu" {
			t.Fatalf("got %q, want gpu", got)
		}
	})
	t.Run("prefer no schedule", func(t *testing.T) {
		c := newCluster(t, st.Node("soft").Taint("x", "", v1.TaintEffectPreferNoSchedule).Obj(), st.Node("plain").Obj())
		if got := c.place(st.Pod("p").Obj()); got != "plain" {
			t.Fatalf("got %q, want plain", got)
		}
	})
	t.Run("anti-affinity one per zone", func(t *testing.T) {
		c := newCluster(t,
			st.Node("a1").Zone("a").Obj(), st.Node("a2").Zone("a").Obj(),
			st.Node("b1").Zone("b").Obj(), st.Node("c1").Zone("c").Obj(),
		)
		zones := map[string]bool{}
		for range 3 {
			host := c.place(st.Pod("web").Label("app", "web").PodAntiAffinity(v1.LabelTopologyZone, "app", "web").Obj())
			if host == "" {
				t.Fatal("did not fit")
			}
			z := c.nodes[0].Labels[v1.LabelTopologyZone]
			for _, n := range c.nodes {
				if n.Name == host {
					z = n.Labels[v1.LabelTopologyZone]
				}
			}
			if zones[z] {
				t.Fatalf("two pods in zone %s", z)
			}
			zones[z] = true
		}
		d := c.decide(st.Pod("web").Label("app", "web").PodAntiAffinity(v1.LabelTopologyZone, "app", "web").Obj())
		want := "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.."
		if d.Err == nil || d.Err.Error() != want {
			t.Fatalf("got %v, want %q", d.Err, want)
		}
	})
	t.Run("affinity follows the database", func(t *testing.T) {
		c := newCluster(t, st.Node("a1").Zone("a").Obj(), st.Node("b1").Zone("b").Obj(), st.Node("b2").Zone("b").Obj())
		c.pods = append(c.pods, st.Pod("db").Label("app", "db").Node("b2").Obj())
		for range 4 {
			if got := c.place(st.Pod("web").PodAffinity(v1.LabelTopologyZone, "app", "db").Obj()); got != "b1" && got != "b2" {
				t.Fatalf("got %q, want zone b", got)
			}
		}
	})
	t.Run("topology spread", func(t *testing.T) {
		c := newCluster(t, st.Node("a1").Zone("a").Obj(), st.Node("a2").Zone("a").Obj(), st.Node("a3").Zone("a").Obj(), st.Node("b1").Zone("b").Obj())
		perZone := map[string]int{}
		for range 6 {
			host := c.place(st.Pod("web").Label("app", "web").Spread(1, v1.LabelTopologyZone, v1.DoNotSchedule, "app", "web").Obj())
			if host == "" {
				t.Fatal("did not fit")
			}
			perZone[host[:1]]++
		}
		if perZone["a"] != 3 || perZone["b"] != 3 {
			t.Fatalf("got %v, want 3 and 3", perZone)
		}
	})
	t.Run("host ports", func(t *testing.T) {
		c := newCluster(t, st.Node("a").Obj(), st.Node("b").Obj())
		first := c.place(st.Pod("p1").HostPort(8080, v1.ProtocolTCP, "").Obj())
		second := c.place(st.Pod("p2").HostPort(8080, v1.ProtocolTCP, "").Obj())
		third := c.decide(st.Pod("p3").HostPort(8080, v1.ProtocolTCP, "").Obj())
		if first == second || first == "" || second == "" {
			t.Fatalf("got %q and %q", first, second)
		}
		want := "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.."
		if third.Err == nil || third.Err.Error() != want {
			t.Fatalf("got %v, want %q", third.Err, want)
		}
	})
}

func TestFitErrorMessage(t *testing.T) {
	c := newCluster(t,
		st.Node("cp").Capacity("8", "8Gi").Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj(),
		st.Node("w1").Capacity("1", "8Gi").Obj(),
		st.Node("w2").Capacity("1", "8Gi").Obj(),
	)
	d := c.decide(st.Pod("big").Req("2", "1Gi").Obj())
	want := "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu. " +
		"preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.."
	var fe *framework.FitError
	if !errors.As(d.Err, &fe) || d.Err.Error() != want {
		t.Fatalf("got %v\nwant %s", d.Err, want)
	}
	if !fe.Diagnosis.UnschedulablePlugins.Has("TaintToleration") || !fe.Diagnosis.UnschedulablePlugins.Has("NodeResourcesFit") {
		t.Errorf("unschedulable plugins %v", fe.Diagnosis.UnschedulablePlugins)
	}
	// Every node failing on an unresolvable reason: preemption cannot help
	// anywhere. Filters run in order; the first failure counts.
	d = c.decide(st.Pod("sel").NodeSelector("nope", "x").Obj())
	want = "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.."
	if d.Err == nil || d.Err.Error() != want {
		t.Fatalf("got %v\nwant %s", d.Err, want)
	}
	d = c.decide(st.Pod("never").Req("2", "").PreemptNever().Obj())
	want = "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.."
	if d.Err == nil || d.Err.Error() != want {
		t.Fatalf("got %v\nwant %s", d.Err, want)
	}
	if d := newCluster(t).decide(st.Pod("p").Obj()); !errors.Is(d.Err, framework.ErrNoNodesAvailable) {
		t.Fatalf("no nodes: got %v", d.Err)
	}
}

func TestPreemption(t *testing.T) {
	t.Run("evicts the lower-priority pod", func(t *testing.T) {
		c := newCluster(t, st.Node("n").Capacity("1", "4Gi").Obj())
		low := st.Pod("low").Priority(10).Req("800m", "").Node("n").Obj()
		c.pods = append(c.pods, low)
		d := c.decide(st.Pod("high").Priority(1000).Req("800m", "").Obj())
		if d.Err == nil || d.Err.Error() != "0/1 nodes are available: 1 Insufficient cpu." {
			t.Fatalf("got %v", d.Err)
		}
		if d.PostFilter == nil || d.PostFilter.NominatedNodeName != "n" || len(d.PostFilter.Victims) != 1 || d.PostFilter.Victims[0] != low {
			t.Fatalf("got %+v", d.PostFilter)
		}
	})
	t.Run("keeps pods it need not evict", func(t *testing.T) {
		c := newCluster(t, st.Node("n").Capacity("2", "4Gi").Obj())
		c.pods = append(c.pods,
			st.Pod("l1").Priority(1).Req("1", "").Node("n").Obj(),
			st.Pod("l2").Priority(2).Req("1", "").Node("n").Obj(),
		)
		d := c.decide(st.Pod("high").Priority(100).Req("1", "").Obj())
		if d.PostFilter == nil || len(d.PostFilter.Victims) != 1 || d.PostFilter.Victims[0].Name != "l1" {
			t.Fatalf("got %+v", d.PostFilter)
		}
	})
	t.Run("equal priority is not preempted", func(t *testing.T) {
		c := newCluster(t, st.Node("n").Capacity("1", "4Gi").Obj())
		c.pods = append(c.pods, st.Pod("same").Priority(100).Req("1", "").Node("n").Obj())
		d := c.decide(st.Pod("high").Priority(100).Req("1", "").Obj())
		want := "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."
		if d.Err == nil || d.Err.Error() != want || d.PostFilter == nil || d.PostFilter.NominatedNodeName != "" {
			t.Fatalf("got %v %+v", d.Err, d.PostFilter)
		}
	})
	t.Run("prefers the node without a PDB violation", func(t *testing.T) {
		c := newCluster(t, st.Node("a").Capacity("1", "4Gi").Obj(), st.Node("b").Capacity("1", "4Gi").Obj())
		c.pods = append(c.pods,
			st.Pod("guarded").Priority(1).Label("app", "db").Req("1", "").Node("a").Obj(),
			st.Pod("free").Priority(5).Req("1", "").Node("b").Obj(),
		)
		c.pdbs = []*policyv1.PodDisruptionBudget{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
			Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
		}}
		d := c.decide(st.Pod("high").Priority(100).Req("1", "").Obj())
		if d.PostFilter == nil || d.PostFilter.NominatedNodeName != "b" {
			t.Fatalf("got %+v", d.PostFilter)
		}
	})
	t.Run("prefers the node with the lowest-priority victims", func(t *testing.T) {
		c := newCluster(t, st.Node("a").Capacity("1", "4Gi").Obj(), st.Node("b").Capacity("1", "4Gi").Obj())
		c.pods = append(c.pods,
			st.Pod("mid").Priority(50).Req("1", "").Node("a").Obj(),
			st.Pod("low").Priority(5).Req("1", "").Node("b").Obj(),
		)
		d := c.decide(st.Pod("high").Priority(100).Req("1", "").Obj())
		if d.PostFilter == nil || d.PostFilter.NominatedNodeName != "b" || d.PostFilter.Victims[0].Name != "low" {
			t.Fatalf("got %+v", d.PostFilter)
		}
	})
	t.Run("waits for its terminating victims", func(t *testing.T) {
		c := newCluster(t, st.Node("n").Capacity("1", "4Gi").Obj())
		victim := st.Pod("low").Priority(1).Req("1", "").Node("n").Obj()
		now := metav1.Now()
		victim.DeletionTimestamp = &now
		victim.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler}}
		c.pods = append(c.pods, victim)
		d := c.decide(st.Pod("high").Priority(100).Req("1", "").NominatedNode("n").Obj())
		want := "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to a terminating pod on the nominated node.."
		if d.Err == nil || d.Err.Error() != want || d.PostFilter != nil {
			t.Fatalf("got %v %+v", d.Err, d.PostFilter)
		}
	})
	t.Run("nominated pods hold their room", func(t *testing.T) {
		c := newCluster(t, st.Node("n").Capacity("1", "4Gi").Obj())
		snap := framework.NewSnapshot(nil, c.nodes)
		nominated := st.Pod("nom").Priority(100).Req("1", "").NominatedNode("n").Obj()
		snap.NominatedPods = map[string][]*framework.PodInfo{"n": {framework.NewPodInfo(nominated)}}
		if d := c.a.Decide(context.Background(), c.f, snap, st.Pod("lower").Priority(1).Req("1", "").Obj()); d.Err == nil {
			t.Fatalf("a lower-priority pod took the nominated pod's room on %s", d.Host)
		}
		if d := c.a.Decide(context.Background(), c.f, snap, st.Pod("higher").Priority(1000).Req("1", "").Obj()); d.Err != nil {
			t.Fatalf("a higher-priority pod was kept out: %v", d.Err)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }

func TestNumFeasibleNodesToFind(t *testing.T) {
	p := func(v int32) *int32 { return &v }
	for _, tt := range []struct {
		pct  *int32
		n    int
		want int
	}{
		{nil, 10, 10}, {nil, 99, 99}, {nil, 1000, 420}, {nil, 5000, 500}, {nil, 10000, 500}, {p(50), 1000, 500}, {p(1), 1000, 100},
	} {
		if got := NumFeasibleNodesToFind(tt.pct, tt.n); got != tt.want {
			t.Errorf("%v of %d: got %d, want %d", tt.pct, tt.n, got, tt.want)
		}
	}
}
