package queue

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time       { return c.t }
func (c *clock) step(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

var fitEvents = map[string][]framework.ClusterEvent{
	"NodeResourcesFit": {
		{Resource: framework.ResourcePod, ActionType: framework.Delete},
		{Resource: framework.ResourceNode, ActionType: framework.Add | framework.UpdateNodeAllocatable},
	},
}

func newQueue(c *clock) *Queue {
	return New(Options{Now: c.now, PluginEvents: fitEvents})
}

func popName(t *testing.T, q *Queue) string {
	t.Helper()
	p, ok := q.Pop()
	if !ok {
		return ""
	}
	q.Done(p.Pod())
	return p.Pod().Name
}

func TestOrder(t *testing.T) {
	q := newQueue(newClock())
	q.Add(st.Pod("old-low").Priority(1).Obj())
	q.Add(st.Pod("new-low").Priority(1).Obj())
	q.Add(st.Pod("high").Priority(100).Obj())
	q.Add(st.Pod("none").Obj())
	want := []string{"high", "old-low", "new-low", "none", ""}
	for _, w := range want {
		if got := popName(t, q); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
}

func TestReadySignal(t *testing.T) {
	q := newQueue(newClock())
	select {
	case <-q.Ready():
		t.Fatal("ready while empty")
	default:
	}
	q.Add(st.Pod("p").Obj())
	select {
	case <-q.Ready():
	default:
		t.Fatal("not ready after Add")
	}
}

func TestBackoff(t *testing.T) {
	c := newClock()
	q := newQueue(c)
	q.Add(st.Pod("p").Obj())
	// Each failure with an error (no plugin to wait for) backs off 1s, 2s,
	// 4s, 8s, then 10s.
	for _, want := range []time.Duration{1, 2, 4, 8, 10, 10} {
		p, ok := q.Pop()
		if !ok {
			t.Fatal("nothing to pop")
		}
		q.AddUnschedulable(p)
		c.step(want*time.Second - time.Millisecond)
		q.Flush()
		if a, b, _, _ := q.Counts(); a != 0 || b != 1 {
			t.Fatalf("before %vs: active %d, backoff %d", want, a, b)
		}
		if got := q.NextBackoffExpiry(); !got.Equal(c.t.Add(time.Millisecond)) {
			t.Fatalf("next expiry %v, want %v", got, c.t.Add(time.Millisecond))
		}
		c.step(time.Millisecond)
		q.Flush()
		if a, _, _, _ := q.Counts(); a != 1 {
			t.Fatalf("after %vs: not active", want)
		}
	}
}

func failWith(t *testing.T, q *Queue, plugins ...string) *QueuedPodInfo {
	t.Helper()
	p, ok := q.Pop()
	if !ok {
		t.Fatal("nothing to pop")
	}
	p.UnschedulablePlugins = sets.New(plugins...)
	q.AddUnschedulable(p)
	return p
}

func TestUnschedulableWaitsForItsEvents(t *testing.T) {
	c := newClock()
	q := newQueue(c)
	q.Add(st.Pod("p").Obj())
	failWith(t, q, "NodeResourcesFit")
	if _, _, u, _ := q.Counts(); u != 1 {
		t.Fatal("not unschedulable")
	}
	// Events NodeResourcesFit does not care about leave it there.
	q.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourceNode, ActionType: framework.UpdateNodeLabel}, nil)
	q.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, ActionType: framework.Add}, nil)
	c.step(time.Minute)
	q.Flush()
	if _, _, u, _ := q.Counts(); u != 1 {
		t.Fatal("moved by an unrelated event")
	}
	// A pre-check that fails keeps it too.
	q.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourceNode, ActionType: framework.Add}, func(*v1.Pod) bool { return false })
	if _, _, u, _ := q.Counts(); u != 1 {
		t.Fatal("moved despite the pre-check")
	}
	// A node added: past its backoff, it goes straight to active.
	q.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourceNode, ActionType: framework.Add}, nil)
	if a, _, u, _ := q.Counts(); a != 1 || u != 0 {
		t.Fatalf("active %d, unschedulable %d", a, u)
	}
}

func TestEventDuringBackoffGoesToBackoff(t *testing.T) {
	c := newClock()
	q := newQueue(c)
	q.Add(st.Pod("p").Obj())
	failWith(t, q, "NodeResourcesFit")
	q.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, ActionType: framework.Delete}, nil)
	if _, b, _, _ := q.Counts(); b != 1 {
		t.Fatal("not backing off")
	}
}

func TestUnschedulableTimeout(t *testing.T) {
	c := newClock()
	q := newQueue(c)
	q.Add(st.Pod("p").Obj())
	failWith(t, q, "NodeResourcesFit")
	c.step(DefaultMaxUnschedulableDuration)
	q.Flush()
	if _, _, u, _ := q.Counts(); u != 1 {
		t.Fatal("flushed too early")
	}
	c.step(time.Second)
	q.Flush()
	if a, _, u, _ := q.Counts(); a != 1 || u != 0 {
		t.Fatal("not flushed after five minutes")
	}
}

func TestEventWhileInFlight(t *testing.T) {
	q := newQueue(newClock())
	q.Add(st.Pod("p").Obj())
	p, _ := q.Pop()
	// A node is added after the cycle took its snapshot: the pod must not
	// wait in unschedulable for another event.
	q.MoveOnEvent(framework.ClusterEvent{Resource: framework.ResourceNode, ActionType: framework.Add}, nil)
	p.UnschedulablePlugins = sets.New("NodeResourcesFit")
	q.AddUnschedulable(p)
	if _, b, u, _ := q.Counts(); b != 1 || u != 0 {
		t.Fatalf("backoff %d, unschedulable %d", b, u)
	}
}

func TestUpdateMovesUnschedulablePod(t *testing.T) {
	c := newClock()
	q := newQueue(c)
	pod := st.Pod("p").Obj()
	q.Add(pod)
	failWith(t, q, "TaintToleration")
	// A status-only update changes nothing.
	st1 := pod.DeepCopy()
	st1.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	st1.ResourceVersion = "2"
	q.Update(st1)
	if _, _, u, _ := q.Counts(); u != 1 {
		t.Fatal("moved by a status update")
	}
	c.step(time.Minute)
	tol := st1.DeepCopy()
	tol.Spec.Tolerations = []v1.Toleration{{Key: "x", Operator: v1.TolerationOpExists}}
	q.Update(tol)
	if a, _, _, _ := q.Counts(); a != 1 {
		t.Fatal("not retried after its spec changed")
	}
	if p, _ := q.Pop(); len(p.Pod().Spec.Tolerations) != 1 {
		t.Fatal("old version popped")
	}
}

func TestGates(t *testing.T) {
	q := newQueue(newClock())
	pod := st.Pod("p").Obj()
	pod.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "wait"}}
	q.Add(pod)
	if _, ok := q.Pop(); ok {
		t.Fatal("gated pod popped")
	}
	open := pod.DeepCopy()
	open.Spec.SchedulingGates = nil
	q.Update(open)
	if got := popName(t, q); got != "p" {
		t.Fatalf("got %q", got)
	}
}

func TestDelete(t *testing.T) {
	q := newQueue(newClock())
	a, b := st.Pod("a").Obj(), st.Pod("b").Obj()
	q.Add(a)
	q.Add(b)
	q.Delete(a)
	p, _ := q.Pop()
	if p.Pod().Name != "b" {
		t.Fatalf("got %s", p.Pod().Name)
	}
	q.Delete(b) // while in flight
	q.AddUnschedulable(p)
	if a, b, u, _ := q.Counts(); a+b+u != 0 {
		t.Fatal("deleted pod came back")
	}
}

func TestNominator(t *testing.T) {
	q := newQueue(newClock())
	nominated := st.Pod("n").NominatedNode("node1").Obj()
	q.Add(nominated)
	if got := q.NominatedPods()["node1"]; len(got) != 1 || got[0].Pod.Name != "n" {
		t.Fatalf("got %v", got)
	}
	other := st.Pod("o").Obj()
	q.AddNominatedPod(framework.NewPodInfo(other), "node2")
	q.AddNominatedPod(framework.NewPodInfo(other), "node1")
	if got := q.NominatedPods(); len(got["node1"]) != 2 || len(got["node2"]) != 0 {
		t.Fatalf("got %v", got)
	}
	q.Delete(nominated)
	q.DeleteNominatedPod(other)
	if got := q.NominatedPods(); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
}
