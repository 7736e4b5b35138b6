package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

func names(s *framework.Snapshot) []string {
	var out []string
	for _, ni := range s.List() {
		out = append(out, ni.Node().Name)
	}
	return out
}

func TestZonesInterleave(t *testing.T) {
	c := New()
	for _, n := range []*v1.Node{
		st.Node("a1").Zone("a").Obj(), st.Node("a2").Zone("a").Obj(), st.Node("a3").Zone("a").Obj(),
		st.Node("b1").Zone("b").Obj(), st.Node("none").Obj(),
	} {
		c.AddNode(n)
	}
	snap := &framework.Snapshot{}
	c.UpdateSnapshot(snap)
	got := names(snap)
	want := []string{"a1", "b1", "none", "a2", "a3"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	// Moving a node to another zone reorders.
	c.UpdateNode(st.Node("a3").Zone("b").Obj())
	c.UpdateSnapshot(snap)
	if got := names(snap); got[1] != "b1" || got[4] != "a3" && got[3] != "a3" {
		t.Fatalf("after zone change: %v", got)
	}
}

func TestAssumeConfirmForget(t *testing.T) {
	c := New()
	c.AddNode(st.Node("n").Capacity("4", "4Gi").Obj())
	snap := &framework.Snapshot{}

	pod := st.Pod("p").Req("1", "1Gi").Node("n").Obj()
	if err := c.AssumePod(pod); err != nil {
		t.Fatal(err)
	}
	if err := c.AssumePod(pod); err == nil {
		t.Fatal("assumed twice")
	}
	c.UpdateSnapshot(snap)
	if ni := snap.Get("n"); len(ni.Pods) != 1 || ni.Requested.MilliCPU != 1000 {
		t.Fatalf("assumed pod not counted: %+v", ni.Requested)
	}
	if !c.IsAssumedPod(pod) {
		t.Fatal("not assumed")
	}
	c.FinishBinding(pod)
	c.AddPod(pod) // the watch confirms
	if c.IsAssumedPod(pod) {
		t.Fatal("still assumed after the watch confirmed it")
	}
	c.UpdateSnapshot(snap)
	if ni := snap.Get("n"); len(ni.Pods) != 1 || ni.Requested.MilliCPU != 1000 {
		t.Fatalf("confirmed pod counted %d times", len(ni.Pods))
	}

	other := st.Pod("q").Req("2", "").Node("n").Obj()
	_ = c.AssumePod(other)
	c.ForgetPod(other)
	c.UpdateSnapshot(snap)
	if ni := snap.Get("n"); len(ni.Pods) != 1 || ni.Requested.MilliCPU != 1000 {
		t.Fatalf("forgotten pod still counted: %d pods", len(ni.Pods))
	}
	c.RemovePod(pod)
	c.UpdateSnapshot(snap)
	if ni := snap.Get("n"); len(ni.Pods) != 0 || ni.Requested.MilliCPU != 0 {
		t.Fatal("removed pod still counted")
	}
}

func TestSnapshotCopiesOnlyChangedNodes(t *testing.T) {
	c := New()
	c.AddNode(st.Node("a").Obj())
	c.AddNode(st.Node("b").Obj())
	s1 := &framework.Snapshot{}
	c.UpdateSnapshot(s1)
	a1, b1 := s1.Get("a"), s1.Get("b")
	c.AddPod(st.Pod("p").Node("b").Obj())
	s2 := &framework.Snapshot{}
	c.UpdateSnapshot(s2)
	if s2.Get("a") != a1 {
		t.Error("unchanged node copied again")
	}
	if s2.Get("b") == b1 || len(b1.Pods) != 0 || len(s2.Get("b").Pods) != 1 {
		t.Error("changed node not copied, or the old copy changed")
	}
}

func TestPodsBeforeNodeAndNodeRemoval(t *testing.T) {
	c := New()
	pod := st.Pod("p").Node("late").Obj()
	c.AddPod(pod)
	snap := &framework.Snapshot{}
	c.UpdateSnapshot(snap)
	if snap.NumNodes() != 0 {
		t.Fatal("a node known only from its pods is offered")
	}
	c.AddNode(st.Node("late").Obj())
	c.UpdateSnapshot(snap)
	if ni := snap.Get("late"); ni == nil || len(ni.Pods) != 1 {
		t.Fatal("pod seen before its node is lost")
	}
	c.RemoveNode(st.Node("late").Obj())
	c.UpdateSnapshot(snap)
	if snap.NumNodes() != 0 {
		t.Fatal("removed node offered")
	}
	if n, p, _ := c.Counts(); n != 0 || p != 1 {
		t.Fatalf("nodes %d pods %d", n, p)
	}
}

func TestImageCounts(t *testing.T) {
	c := New()
	c.AddNode(st.Node("a").Image("img:1", 100).Obj())
	c.AddNode(st.Node("b").Image("img:1", 100).Image("other", 5).Obj())
	snap := &framework.Snapshot{}
	c.UpdateSnapshot(snap)
	if snap.ImageNumNodes("img:1") != 2 || snap.ImageNumNodes("other:latest") != 1 {
		t.Fatalf("got %d %d", snap.ImageNumNodes("img:1"), snap.ImageNumNodes("other:latest"))
	}
	c.RemoveNode(st.Node("b").Image("img:1", 100).Image("other", 5).Obj())
	c.UpdateSnapshot(snap)
	if snap.ImageNumNodes("img:1") != 1 || snap.ImageNumNodes("other:latest") != 0 {
		t.Fatal("image counts not updated")
	}
}
