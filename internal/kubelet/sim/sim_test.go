package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"plainkube.dev/plainkube/internal/server"
)

// env is one test's control plane and Sim, on a fake clock.
type env struct {
	t     *testing.T
	cs    kubernetes.Interface
	clock *clocktesting.FakeClock
	sim   *Sim
}

func startServer(t *testing.T) *rest.Config {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := server.Start(ctx, server.Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", Port: 0, InMemory: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		cancel()
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { cancel(); s.Wait() })
	return s.LoopbackConfig()
}

// startSim runs a Sim of opts against a fresh server until the test ends,
// and waits for its nodes to be registered.
func startSim(t *testing.T, opts Options) *env {
	t.Helper()
	cfg := startServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	if opts.Clock == nil {
		opts.Clock = clk
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	e := &env{t: t, cs: kubernetes.NewForConfigOrDie(cfg), clock: clk, sim: s}
	for _, n := range s.nodes {
		e.eventually(fmt.Sprintf("node %s registered", n.name), func() bool { return n.registered.Load() })
	}
	return e
}

// eventually waits (in real time) for cond.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stepUntil advances the fake clock a second at a time, giving the Sim a
// moment after each step, until cond holds; at most limit of fake time.
func (e *env) stepUntil(what string, limit time.Duration, cond func() bool) {
	e.t.Helper()
	for stepped := time.Duration(0); !cond(); stepped += time.Second {
		if stepped > limit {
			e.t.Fatalf("no %s after %v of fake time", what, limit)
		}
		e.clock.Step(time.Second)
		for range 10 {
			if cond() {
				return
			}
			time.Sleep(3 * time.Millisecond)
		}
	}
}

func (e *env) pod(name string) *corev1.Pod {
	e.t.Helper()
	p, err := e.cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) createPod(name, node string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	p, err := e.cs.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func (e *env) podReady(name string) bool {
	p := e.pod(name)
	return p != nil && p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
}

func (e *env) renewTime(node string) time.Time {
	e.t.Helper()
	l, err := e.cs.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return l.Spec.RenewTime.Time
}

func TestNodesRegisterReady(t *testing.T) {
	e := startSim(t, Options{Nodes: 3})
	ctx := context.Background()
	for i, zone := range []string{"zone-a", "zone-b", "zone-c"} {
		name := fmt.Sprintf("sim-%d", i)
		n, err := e.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{LabelSimulated: "true", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
			"kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": zone} {
			if n.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", name, k, n.Labels[k], v)
			}
		}
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			t.Errorf("%s not Ready: %+v", name, n.Status.Conditions)
		}
		if want := fmt.Sprintf("10.42.%d.0/24", i); n.Spec.PodCIDR != want {
			t.Errorf("%s: podCIDR %q, want %q", name, n.Spec.PodCIDR, want)
		}
		if n.Status.NodeInfo.ContainerRuntimeVersion != RuntimeVersion || n.Status.Capacity.Pods().Value() != 110 {
			t.Errorf("%s: nodeInfo %+v capacity %v", name, n.Status.NodeInfo, n.Status.Capacity)
		}
		l, err := e.cs.CoordinationV1().Leases(LeaseNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease %s: %v", name, err)
		}
		if *l.Spec.HolderIdentity != name || *l.Spec.LeaseDurationSeconds != 40 || l.OwnerReferences[0].UID != n.UID {
			t.Errorf("lease %+v", l)
		}
	}
}

func TestPodRunsWithAddress(t *testing.T) {
	e := startSim(t, Options{Nodes: 3})
	e.createPod("web", "sim-1")
	e.eventually("pod Running and Ready", func() bool { return e.podReady("web") })
	p := e.pod("web")
	ip, err := netip.ParseAddr(p.Status.PodIP)
	if err != nil || !netip.MustParsePrefix("10.42.1.0/24").Contains(ip) {
		t.Errorf("podIP %q not in sim-1's CIDR", p.Status.PodIP)
	}
	if p.Status.HostIP != "172.16.0.2" || p.Status.StartTime == nil {
		t.Errorf("hostIP %q startTime %v", p.Status.HostIP, p.Status.StartTime)
	}
	cs := p.Status.ContainerStatuses
	if len(cs) != 1 || cs[0].State.Running == nil || !cs[0].Ready || cs[0].ImageID == "" || cs[0].ContainerID == "" {
		t.Errorf("container statuses %+v", cs)
	}
	if p.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("qosClass %q", p.Status.QOSClass)
	}
	for _, want := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		if podCondition(p, want) != corev1.ConditionTrue {
			t.Errorf("condition %s = %q", want, podCondition(p, want))
		}
	}

	// A second pod gets another address.
	e.createPod("web2", "sim-1")
	e.eventually("second pod Ready", func() bool { return e.podReady("web2") })
	if e.pod("web2").Status.PodIP == p.Status.PodIP {
		t.Errorf("two pods share %s", p.Status.PodIP)
	}

	// Pods on nodes that are not ours are left alone.
	other := e.createPod("elsewhere", "real-node")
	time.Sleep(50 * time.Millisecond)
	if got := e.pod("elsewhere"); got.Status.StartTime != nil || got.ResourceVersion != other.ResourceVersion {
		t.Errorf("pod on a foreign node was touched: %+v", got.Status)
	}
}

func TestReadinessGateHoldsReady(t *testing.T) {
	e := startSim(t, Options{Nodes: 1})
	const gateType = "example.com/load-balancer"
	e.createPod("gated", "sim-0", func(p *corev1.Pod) {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gateType}}
	})
	e.eventually("containers ready", func() bool {
		p := e.pod("gated")
		return podCondition(p, corev1.ContainersReady) == corev1.ConditionTrue
	})
	if p := e.pod("gated"); podCondition(p, corev1.PodReady) != corev1.ConditionFalse {
		t.Fatalf("Ready = %q with its gate unset", podCondition(p, corev1.PodReady))
	}
	// Another controller sets the gate's condition.
	p := e.pod("gated")
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: gateType, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
	if _, err := e.cs.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("Ready once the gate is True", func() bool { return e.podReady("gated") })
}

func TestExitNeverFails(t *testing.T) {
	e := startSim(t, Options{Nodes: 1})
	e.createPod("fails", "sim-0", func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Annotations[AnnotationExitAfter] = "5s"
		p.Annotations[AnnotationExitCode] = "1"
	})
	e.eventually("running", func() bool { return e.podReady("fails") })
	e.stepUntil("Failed", time.Minute, func() bool { return e.pod("fails").Status.Phase == corev1.PodFailed })
	term := e.pod("fails").Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 1 || term.Reason != "Error" {
		t.Errorf("terminated %+v", term)
	}
}

func TestJobLikePodSucceeds(t *testing.T) {
	e := startSim(t, Options{Nodes: 1})
	e.createPod("job", "sim-0", func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Annotations[AnnotationExitAfter] = "2s"
		p.Annotations[AnnotationExitCode] = "0"
	})
	e.stepUntil("Succeeded", time.Minute, func() bool { return e.pod("job").Status.Phase == corev1.PodSucceeded })
	if term := e.pod("job").Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "Completed" {
		t.Errorf("terminated %+v", term)
	}
}

func TestOnFailureCrashLoops(t *testing.T) {
	e := startSim(t, Options{Nodes: 1})
	p := e.createPod("crash", "sim-0", func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		p.Annotations[AnnotationExitAfter] = "1s"
		p.Annotations[AnnotationExitCode] = "3"
	})
	e.eventually("running", func() bool { return e.podReady("crash") })
	e.stepUntil("CrashLoopBackOff", time.Minute, func() bool {
		w := e.pod("crash").Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff"
	})
	cs := e.pod("crash").Status.ContainerStatuses[0]
	want := fmt.Sprintf("back-off 10s restarting failed container=app pod=crash_default(%s)", p.UID)
	if cs.State.Waiting.Message != want || cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil {
		t.Errorf("status %+v, want message %q", cs, want)
	}
	e.stepUntil("restartCount 3", 2*time.Minute, func() bool { return e.pod("crash").Status.ContainerStatuses[0].RestartCount >= 3 })
	if ph := e.pod("crash").Status.Phase; ph != corev1.PodRunning {
		t.Errorf("phase %s, want Running", ph)
	}
}

func TestGracefulDeletion(t *testing.T) {
	e := startSim(t, Options{Nodes: 1})
	// By default the containers exit as soon as they are asked to stop.
	e.createPod("quick", "sim-0")
	e.eventually("quick running", func() bool { return e.podReady("quick") })
	if err := e.cs.CoreV1().Pods("default").Delete(context.Background(), "quick", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("quick pod gone", func() bool { return e.pod("quick") == nil })

	// A stop delay keeps it terminating, here until its grace period ends.
	e.createPod("bye", "sim-0", func(p *corev1.Pod) {
		p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(3))
		p.Annotations[AnnotationStopDelay] = "1m"
	})
	e.eventually("running", func() bool { return e.podReady("bye") })
	if err := e.cs.CoreV1().Pods("default").Delete(context.Background(), "bye", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := e.pod("bye"); p == nil || p.DeletionTimestamp == nil {
		t.Fatalf("pod should be terminating: %+v", p)
	}
	e.stepUntil("pod gone", time.Minute, func() bool { return e.pod("bye") == nil })

	// With nothing running (still starting), it goes at once.
	e.createPod("slow", "sim-0", func(p *corev1.Pod) { p.Annotations[AnnotationStartDelay] = "1h" })
	e.eventually("started", func() bool { return e.pod("slow").Status.StartTime != nil })
	if err := e.cs.CoreV1().Pods("default").Delete(context.Background(), "slow", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("slow pod gone", func() bool { return e.pod("slow") == nil })
}

func TestStoppedNode(t *testing.T) {
	e := startSim(t, Options{Nodes: 2, HeartbeatInterval: 2 * time.Second})
	ctx := context.Background()
	first := e.renewTime("sim-0")
	e.stepUntil("a lease renewal", 10*time.Second, func() bool { return e.renewTime("sim-0").After(first) })

	annotate := func(v *string) {
		t.Helper()
		patch := `{"metadata":{"annotations":{"` + AnnotationStopped + `":null}}}`
		if v != nil {
			patch = `{"metadata":{"annotations":{"` + AnnotationStopped + `":"` + *v + `"}}}`
		}
		if _, err := e.cs.CoreV1().Nodes().Patch(ctx, "sim-0", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	annotate(ptrTo("true"))
	e.eventually("node seen stopped", func() bool { return e.sim.byName["sim-0"].stopped.Load() })
	stoppedAt := e.renewTime("sim-0")
	other := e.renewTime("sim-1")
	for range 10 {
		e.clock.Step(time.Second)
		time.Sleep(5 * time.Millisecond)
	}
	e.eventually("the other node renewing", func() bool { return e.renewTime("sim-1").After(other) })
	if got := e.renewTime("sim-0"); !got.Equal(stoppedAt) {
		t.Fatalf("stopped node renewed its lease: %v -> %v", stoppedAt, got)
	}
	// A stopped node's pods are not started either.
	e.createPod("orphan", "sim-0")
	time.Sleep(50 * time.Millisecond)
	if p := e.pod("orphan"); p.Status.StartTime != nil {
		t.Errorf("pod started on a stopped node")
	}

	annotate(nil)
	e.eventually("lease renewed after resuming", func() bool { return e.renewTime("sim-0").After(stoppedAt) })
	e.eventually("pod runs after resuming", func() bool { return e.podReady("orphan") })
	e.eventually("Ready with a fresh heartbeat after resuming", func() bool {
		n, err := e.cs.CoreV1().Nodes().Get(ctx, "sim-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue && !c.LastHeartbeatTime.Time.Before(e.clock.Now().Add(-time.Second))
			}
		}
		return false
	})
}

func TestRegistersExistingNode(t *testing.T) {
	cfg := startServer(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	// A node left by an earlier run, with a label of its own.
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sim-0", Labels: map[string]string{"keep": "me"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Options{Nodes: 1, Clock: clocktesting.NewFakeClock(time.Now()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	e := &env{t: t, cs: cs}
	e.eventually("registered", func() bool { return s.nodes[0].registered.Load() })
	n, err := cs.CoreV1().Nodes().Get(ctx, "sim-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels["keep"] != "me" || n.Labels[LabelSimulated] != "true" || n.Spec.PodCIDR != "10.42.0.0/24" || n.Status.Capacity.Cpu().String() != "8" {
		t.Errorf("adopted node: labels %v podCIDR %q capacity %v", n.Labels, n.Spec.PodCIDR, n.Status.Capacity)
	}
}

func TestRegisterManyNodes(t *testing.T) {
	cfg := startServer(t)
	const nodes = 200
	s, err := New(cfg, Options{Nodes: nodes, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	e := &env{t: t}
	e.eventually("all nodes registered", func() bool {
		for _, n := range s.nodes {
			if !n.registered.Load() {
				return false
			}
		}
		return true
	})
	took := time.Since(began)
	t.Logf("registered %d nodes in %v", nodes, took)
	if took > 5*time.Second {
		t.Errorf("registering %d nodes took %v", nodes, took)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	list, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: LabelSimulated + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := cs.CoordinationV1().Leases(LeaseNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != nodes || len(leases.Items) != nodes {
		t.Errorf("%d nodes and %d leases, want %d", len(list.Items), len(leases.Items), nodes)
	}
}
