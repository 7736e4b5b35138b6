package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/scheduler/internal/st"
	"plainkube.dev/plainkube/internal/server"
)

// env is an in-process API server with a scheduler talking to it.
type env struct {
	t   *testing.T
	cfg *rest.Config
	cs  kubernetes.Interface
	ctx context.Context
}

func testLogger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("SCHED_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := server.Start(ctx, server.Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", Port: 0, InMemory: true})
	if err != nil {
		cancel()
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { cancel(); s.Wait() })
	cfg := s.LoopbackConfig()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, cfg: cfg, cs: cs, ctx: ctx}
}

// startScheduler runs a scheduler until the test ends.
func (e *env) startScheduler(opts Options) {
	e.t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	s, err := New(e.cfg, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("scheduler: %v", err)
		}
	})
}

func (e *env) node(n *v1.Node) {
	e.t.Helper()
	n = n.DeepCopy()
	n.UID = ""
	if _, err := e.cs.CoreV1().Nodes().Create(e.ctx, n, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create node %s: %v", n.Name, err)
	}
}

func (e *env) pod(p *v1.Pod) *v1.Pod {
	e.t.Helper()
	p = p.DeepCopy()
	p.UID, p.CreationTimestamp = "", metav1.Time{}
	got, err := e.cs.CoreV1().Pods(p.Namespace).Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s: %v", p.Name, err)
	}
	return got
}

// waitFor polls cond until it holds, failing the test after timeout.
func (e *env) waitFor(what string, timeout time.Duration, cond func() (bool, error)) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("timed out waiting for %s (last error: %v)", what, lastErr)
}

// bound waits for a pod to get a node and returns it.
func (e *env) bound(name string) string {
	e.t.Helper()
	var node string
	e.waitFor("pod "+name+" to be bound", 10*time.Second, func() (bool, error) {
		p, err := e.cs.CoreV1().Pods("default").Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	return node
}

// unschedulable waits for a pod's PodScheduled=False condition and
// returns its message.
func (e *env) unschedulable(name string) string {
	e.t.Helper()
	var msg string
	e.waitFor("pod "+name+" to be marked unschedulable", 10*time.Second, func() (bool, error) {
		p, err := e.cs.CoreV1().Pods("default").Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("bound to %s", p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
				if c.Reason != v1.PodReasonUnschedulable {
					return false, fmt.Errorf("reason %q", c.Reason)
				}
				msg = c.Message
				return true, nil
			}
		}
		return false, nil
	})
	return msg
}

// event waits for an event about a pod with the reason and returns its
// message.
func (e *env) event(pod, reason string) *v1.Event {
	e.t.Helper()
	var ev *v1.Event
	e.waitFor(reason+" event for "+pod, 10*time.Second, func() (bool, error) {
		l, err := e.cs.CoreV1().Events("default").List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range l.Items {
			if l.Items[i].InvolvedObject.Name == pod && l.Items[i].Reason == reason {
				ev = &l.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	return ev
}

func zoneOf(nodes []*v1.Node, name string) string {
	for _, n := range nodes {
		if n.Name == name {
			return n.Labels[v1.LabelTopologyZone]
		}
	}
	return ""
}

// TestScheduling runs the loop against an API server: pods land where
// upstream would put them.
func TestScheduling(t *testing.T) {
	e := newEnv(t)
	nodes := []*v1.Node{
		st.Node("cp").Capacity("8", "16Gi").Zone("a").Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj(),
		st.Node("a1").Capacity("2", "4Gi").Zone("a").Label("disk", "ssd").Obj(),
		st.Node("b1").Capacity("4", "8Gi").Zone("b").Obj(),
		st.Node("c1").Capacity("2", "4Gi").Zone("c").Obj(),
	}
	for _, n := range nodes {
		e.node(n)
	}
	e.startScheduler(Options{})

	e.pod(st.Pod("ssd").NodeSelector("disk", "ssd").Obj())
	if got := e.bound("ssd"); got != "a1" {
		t.Errorf("nodeSelector: got %s, want a1", got)
	}
	e.pod(st.Pod("on-cp").Toleration("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).NodeAffinityIn(v1.LabelTopologyZone, "a").Req("3", "").Obj())
	if got := e.bound("on-cp"); got != "cp" {
		t.Errorf("toleration and affinity: got %s, want cp", got)
	}
	e.pod(st.Pod("big").Req("3", "1Gi").Obj())
	if got := e.bound("big"); got != "b1" {
		t.Errorf("resources: got %s, want b1", got)
	}

	// One per zone; a fourth has nowhere to go (cp's taint is not
	// tolerated).
	zones := map[string]string{}
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		e.pod(st.Pod(name).Label("app", "web").PodAntiAffinity(v1.LabelTopologyZone, "app", "web").Obj())
		z := zoneOf(nodes, e.bound(name))
		if prev, dup := zones[z]; dup {
			t.Errorf("%s and %s both in zone %s", prev, name, z)
		}
		zones[z] = name
	}
	e.pod(st.Pod("web-3").Label("app", "web").PodAntiAffinity(v1.LabelTopologyZone, "app", "web").Obj())
	want := "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 3 node(s) didn't match pod anti-affinity rules. " +
		"preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.."
	if got := e.unschedulable("web-3"); got != want {
		t.Errorf("anti-affinity message:\n got %s\nwant %s", got, want)
	}

	// Spread over zones b and c (a is excluded by affinity).
	perZone := map[string]int{}
	for i := range 4 {
		name := fmt.Sprintf("spread-%d", i)
		e.pod(st.Pod(name).Label("app", "spread").NodeAffinityIn(v1.LabelTopologyZone, "b", "c").Spread(1, v1.LabelTopologyZone, v1.DoNotSchedule, "app", "spread").Obj())
		perZone[zoneOf(nodes, e.bound(name))]++
	}
	if perZone["b"] != 2 || perZone["c"] != 2 {
		t.Errorf("topology spread: got %v, want 2 in b and 2 in c", perZone)
	}

	// Host ports: one per node among a1, b1, c1.
	hosts := map[string]bool{}
	for i := range 3 {
		name := fmt.Sprintf("port-%d", i)
		e.pod(st.Pod(name).HostPort(9000, v1.ProtocolTCP, "").Obj())
		h := e.bound(name)
		if hosts[h] {
			t.Errorf("two pods with host port 9000 on %s", h)
		}
		hosts[h] = true
	}

	ev := e.event("ssd", "Scheduled")
	if ev.Message != "Successfully assigned default/ssd to a1" || ev.Source.Component != "default-scheduler" || ev.ReportingController != "default-scheduler" {
		t.Errorf("Scheduled event: %q from %q/%q", ev.Message, ev.Source.Component, ev.ReportingController)
	}
}

// TestUnschedulableUntilNodeAppears: a pod that fits nowhere stays
// Pending with upstream's message, and is scheduled as soon as a node
// that fits it is added.
func TestUnschedulableUntilNodeAppears(t *testing.T) {
	e := newEnv(t)
	e.node(st.Node("cp").Capacity("8", "16Gi").Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj())
	e.node(st.Node("w1").Capacity("1", "4Gi").Obj())
	e.node(st.Node("w2").Capacity("1", "4Gi").Obj())
	e.startScheduler(Options{})

	e.pod(st.Pod("big").Req("2", "1Gi").Obj())
	want := "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu. " +
		"preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.."
	if got := e.unschedulable("big"); got != want {
		t.Errorf("message:\n got %s\nwant %s", got, want)
	}
	ev := e.event("big", "FailedScheduling")
	if ev.Type != v1.EventTypeWarning || ev.Message != want {
		t.Errorf("FailedScheduling event: %s %q", ev.Type, ev.Message)
	}
	// The pod waits for a relevant event rather than retrying.
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	e.node(st.Node("w3").Capacity("4", "8Gi").Obj())
	if got := e.bound("big"); got != "w3" {
		t.Errorf("got %s, want w3", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v after the node appeared", d)
	}
}

// TestPreemption: a high-priority pod evicts a low-priority one.
func TestPreemptionThroughAPI(t *testing.T) {
	e := newEnv(t)
	for name, v := range map[string]int32{"low": 10, "high": 1000} {
		if _, err := e.cs.SchedulingV1().PriorityClasses().Create(e.ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.node(st.Node("n").Capacity("1", "4Gi").Obj())
	e.startScheduler(Options{})

	low := st.Pod("low").Req("800m", "").Obj()
	low.Spec.PriorityClassName = "low"
	e.pod(low)
	if got := e.bound("low"); got != "n" {
		t.Fatalf("low: got %s", got)
	}
	high := st.Pod("high").Req("800m", "").Obj()
	high.Spec.PriorityClassName = "high"
	e.pod(high)

	// The victim is marked and deleted; with no kubelet to finish the
	// graceful deletion, the test does it.
	e.waitFor("the victim to be terminating", 10*time.Second, func() (bool, error) {
		p, err := e.cs.CoreV1().Pods("default").Get(e.ctx, "low", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.DeletionTimestamp == nil {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.DisruptionTarget && c.Reason == v1.PodReasonPreemptionByScheduler && c.Message == "default-scheduler: preempting to accommodate a higher priority pod" {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %v", p.Status.Conditions)
	})
	e.waitFor("the preemptor to be nominated", 10*time.Second, func() (bool, error) {
		p, err := e.cs.CoreV1().Pods("default").Get(e.ctx, "high", metav1.GetOptions{})
		return err == nil && p.Status.NominatedNodeName == "n", err
	})
	ev := e.event("low", "Preempted")
	if !strings.HasPrefix(ev.Message, "Preempted by pod ") || !strings.HasSuffix(ev.Message, " on node n") {
		t.Errorf("Preempted event: %q", ev.Message)
	}
	zero := int64(0)
	if err := e.cs.CoreV1().Pods("default").Delete(e.ctx, "low", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if got := e.bound("high"); got != "n" {
		t.Errorf("high: got %s, want n", got)
	}
}

// TestSchedulerName: pods for another scheduler are left alone.
func TestSchedulerName(t *testing.T) {
	e := newEnv(t)
	e.node(st.Node("n").Obj())
	e.startScheduler(Options{})
	other := st.Pod("other").Obj()
	other.Spec.SchedulerName = "someone-else"
	e.pod(other)
	e.pod(st.Pod("mine").Obj())
	e.bound("mine")
	p, err := e.cs.CoreV1().Pods("default").Get(e.ctx, "other", metav1.GetOptions{})
	if err != nil || p.Spec.NodeName != "" || len(p.Status.Conditions) != 0 {
		t.Errorf("other scheduler's pod touched: %v %+v", err, p.Status)
	}
}

// TestLeaderElection: of two schedulers only the lease holder schedules,
// and the other takes over when it stops.
func TestLeaderElection(t *testing.T) {
	e := newEnv(t)
	e.node(st.Node("n").Obj())
	le := func(id string) *LeaderElection {
		return &LeaderElection{Identity: id, LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond}
	}
	// The first scheduler runs under its own context so it can be stopped.
	s1, err := New(e.cfg, Options{LeaderElection: le("one"), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx1, stop1 := context.WithCancel(e.ctx)
	done1 := make(chan error, 1)
	go func() { done1 <- s1.Run(ctx1) }()
	var lease *coordinationv1.Lease
	e.waitFor("scheduler one to lead", 10*time.Second, func() (bool, error) {
		lease, err = e.cs.CoordinationV1().Leases("kube-system").Get(e.ctx, "kube-scheduler", metav1.GetOptions{})
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == "one", err
	})
	e.startScheduler(Options{LeaderElection: le("two")})
	e.pod(st.Pod("first").Obj())
	e.bound("first")

	stop1()
	if err := <-done1; err != nil {
		t.Errorf("scheduler one: %v", err)
	}
	e.pod(st.Pod("second").Obj())
	e.bound("second")
	lease, err = e.cs.CoordinationV1().Leases("kube-system").Get(e.ctx, "kube-scheduler", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "two" {
		t.Errorf("lease holder after failover: %v %v", err, lease.Spec.HolderIdentity)
	}
}
