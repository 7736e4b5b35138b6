package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

var testEnv = podEnv{hostIP: "172.16.0.1", podIP: "10.42.0.2"}

type podOpt func(*corev1.Pod)

func testPod(opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Generation: 1, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			NodeName:      "sim-0",
			RestartPolicy: corev1.RestartPolicyAlways,
			Containers:    []corev1.Container{{Name: "c", Image: "nginx"}},
		},
		Status: corev1.PodStatus{
			Phase:    corev1.PodPending,
			QOSClass: corev1.PodQOSBestEffort,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute))},
			},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ann(k, v string) podOpt { return func(p *corev1.Pod) { p.Annotations[k] = v } }

func policy(r corev1.RestartPolicy) podOpt { return func(p *corev1.Pod) { p.Spec.RestartPolicy = r } }

func initContainers(names ...string) podOpt {
	return func(p *corev1.Pod) {
		for _, n := range names {
			c := corev1.Container{Name: strings.TrimSuffix(n, "*"), Image: "busybox"}
			if strings.HasSuffix(n, "*") {
				c.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways) // sidecar
			}
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		}
	}
}

func gate(t corev1.PodConditionType) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: t})
	}
}

func condition(t corev1.PodConditionType, s corev1.ConditionStatus) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s})
	}
}

func deleting(grace int64, at time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.DeletionGracePeriodSeconds = &grace
		p.DeletionTimestamp = &metav1.Time{Time: at}
	}
}

// syncAt feeds decide's status back into the pod at each of the given
// offsets from t0 (as the driver does) and returns the pod and the last
// decision.
func syncAt(t *testing.T, pod *corev1.Pod, at ...time.Duration) (*corev1.Pod, decision) {
	t.Helper()
	pod = pod.DeepCopy()
	var d decision
	for _, off := range at {
		d = decide(pod, testEnv, t0.Add(off))
		pod.Status = d.status
		// Deciding again at the same time changes nothing.
		if again := decide(pod, testEnv, t0.Add(off)); !apiequality.Semantic.DeepEqual(again.status, d.status) || !again.next.Equal(d.next) {
			t.Fatalf("decide is not idempotent at %v:\n%s\nthen\n%s", off, summary(d.status), summary(again.status))
		}
	}
	return pod, d
}

// summary is a compact, readable form of a pod status.
func summary(st corev1.PodStatus) string {
	var b strings.Builder
	b.WriteString(string(st.Phase))
	for _, c := range st.Conditions {
		if c.Type == corev1.PodScheduled {
			continue
		}
		fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
		if c.Reason != "" {
			fmt.Fprintf(&b, "(%s)", c.Reason)
		}
	}
	state := func(prefix string, cs corev1.ContainerStatus) {
		fmt.Fprintf(&b, " %s%s:", prefix, cs.Name)
		switch s := cs.State; {
		case s.Running != nil:
			fmt.Fprintf(&b, "running@%s", s.Running.StartedAt.Sub(t0))
		case s.Terminated != nil:
			fmt.Fprintf(&b, "terminated(%d,%s)@%s", s.Terminated.ExitCode, s.Terminated.Reason, s.Terminated.FinishedAt.Sub(t0))
		case s.Waiting != nil:
			fmt.Fprintf(&b, "waiting(%s)", s.Waiting.Reason)
		}
		if cs.Ready {
			b.WriteString(",ready")
		}
		if cs.RestartCount > 0 {
			fmt.Fprintf(&b, ",restarts=%d", cs.RestartCount)
		}
	}
	for _, cs := range st.InitContainerStatuses {
		state("init/", cs)
	}
	for _, cs := range st.ContainerStatuses {
		state("", cs)
	}
	return b.String()
}

func TestDecide(t *testing.T) {
	never, onFailure := policy(corev1.RestartPolicyNever), policy(corev1.RestartPolicyOnFailure)
	tests := []struct {
		name   string
		pod    *corev1.Pod
		at     []time.Duration // offsets from t0 at which the pod is synced
		want   string
		next   time.Duration // from t0; -1: none
		delete bool
	}{
		{
			name: "starts at once",
			pod:  testPod(),
			at:   []time.Duration{0},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True c:running@0s,ready",
			next: -1,
		},
		{
			name: "start delay: pending with an address",
			pod:  testPod(ann(AnnotationStartDelay, "2s")),
			at:   []time.Duration{0},
			want: "Pending PodReadyToStartContainers=True Initialized=True ContainersReady=False(ContainersNotReady) Ready=False(ContainersNotReady) c:waiting(ContainerCreating)",
			next: 2 * time.Second,
		},
		{
			name: "start delay: then running",
			pod:  testPod(ann(AnnotationStartDelay, "2s")),
			at:   []time.Duration{0, 2 * time.Second},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True c:running@2s,ready",
			next: -1,
		},
		{
			name: "start delay caught up late starts at the due time",
			pod:  testPod(ann(AnnotationStartDelay, "2")),
			at:   []time.Duration{0, time.Minute},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True c:running@2s,ready",
			next: -1,
		},
		{
			name: "ready after",
			pod:  testPod(ann(AnnotationReadyAfter, "3s")),
			at:   []time.Duration{0},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=False(ContainersNotReady) Ready=False(ContainersNotReady) c:running@0s",
			next: 3 * time.Second,
		},
		{
			name: "ready after, then ready",
			pod:  testPod(ann(AnnotationReadyAfter, "3s")),
			at:   []time.Duration{0, 3 * time.Second},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True c:running@0s,ready",
			next: -1,
		},
		{
			name: "readiness gate without its condition holds Ready",
			pod:  testPod(gate("example.com/lb")),
			at:   []time.Duration{0},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=False(ReadinessGatesNotReady) c:running@0s,ready",
			next: -1,
		},
		{
			name: "readiness gate False holds Ready",
			pod:  testPod(gate("example.com/lb"), condition("example.com/lb", corev1.ConditionFalse)),
			at:   []time.Duration{0},
			want: "Running example.com/lb=False PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=False(ReadinessGatesNotReady) c:running@0s,ready",
			next: -1,
		},
		{
			name: "readiness gate True",
			pod:  testPod(gate("example.com/lb"), condition("example.com/lb", corev1.ConditionTrue)),
			at:   []time.Duration{0},
			want: "Running example.com/lb=True PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True c:running@0s,ready",
			next: -1,
		},
		{
			name: "init containers complete in order first",
			pod:  testPod(initContainers("a", "b")),
			at:   []time.Duration{0},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True init/a:terminated(0,Completed)@0s init/b:terminated(0,Completed)@0s c:running@0s,ready",
			next: -1,
		},
		{
			name: "init containers pending",
			pod:  testPod(initContainers("a", "b"), ann(AnnotationStartDelay, "1s")),
			at:   []time.Duration{0},
			want: "Pending PodReadyToStartContainers=True Initialized=False(ContainersNotInitialized) ContainersReady=False(ContainersNotReady) Ready=False(ContainersNotReady) init/a:waiting(PodInitializing) init/b:waiting(PodInitializing) c:waiting(PodInitializing)",
			next: time.Second,
		},
		{
			name: "sidecar keeps running",
			pod:  testPod(initContainers("side*", "a")),
			at:   []time.Duration{0},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True init/side:running@0s,ready init/a:terminated(0,Completed)@0s c:running@0s,ready",
			next: -1,
		},
		{
			name: "exit code 1, Never: running until it exits",
			pod:  testPod(never, ann(AnnotationExitAfter, "5s"), ann(AnnotationExitCode, "1")),
			at:   []time.Duration{0},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True c:running@0s,ready",
			next: 5 * time.Second,
		},
		{
			name: "exit code 1, Never: Failed",
			pod:  testPod(never, ann(AnnotationExitAfter, "5s"), ann(AnnotationExitCode, "1")),
			at:   []time.Duration{0, 5 * time.Second},
			want: "Failed PodReadyToStartContainers=False Initialized=True ContainersReady=False(ContainersNotReady) Ready=False(ContainersNotReady) c:terminated(1,Error)@5s",
			next: -1,
		},
		{
			name: "exit code 0, Never: Succeeded, sidecar stopped",
			pod:  testPod(never, initContainers("side*"), ann(AnnotationExitAfter, "5s")),
			at:   []time.Duration{0, 7 * time.Second},
			want: "Succeeded PodReadyToStartContainers=False Initialized=True ContainersReady=False(PodCompleted) Ready=False(PodCompleted) init/side:terminated(0,Completed)@5s c:terminated(0,Completed)@5s",
			next: -1,
		},
		{
			name: "exit code 0, OnFailure: Succeeded",
			pod:  testPod(onFailure, ann(AnnotationExitAfter, "5s")),
			at:   []time.Duration{0, 5 * time.Second},
			want: "Succeeded PodReadyToStartContainers=False Initialized=True ContainersReady=False(PodCompleted) Ready=False(PodCompleted) c:terminated(0,Completed)@5s",
			next: -1,
		},
		{
			name: "OnFailure: first exit restarts at once",
			pod:  testPod(onFailure, ann(AnnotationExitAfter, "5s"), ann(AnnotationExitCode, "2")),
			at:   []time.Duration{0, 5 * time.Second},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True c:running@5s,ready,restarts=1",
			next: 10 * time.Second,
		},
		{
			name: "OnFailure: second exit backs off 10s",
			pod:  testPod(onFailure, ann(AnnotationExitAfter, "5s"), ann(AnnotationExitCode, "2")),
			at:   []time.Duration{0, 5 * time.Second, 10 * time.Second},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=False(ContainersNotReady) Ready=False(ContainersNotReady) c:waiting(CrashLoopBackOff),restarts=1",
			next: 20 * time.Second,
		},
		{
			name: "OnFailure: back-off over, third run",
			pod:  testPod(onFailure, ann(AnnotationExitAfter, "5s"), ann(AnnotationExitCode, "2")),
			at:   []time.Duration{0, 5 * time.Second, 10 * time.Second, 20 * time.Second},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True c:running@20s,ready,restarts=2",
			next: 25 * time.Second,
		},
		{
			name: "OnFailure: the same, caught up in one sync",
			pod:  testPod(onFailure, ann(AnnotationExitAfter, "5s"), ann(AnnotationExitCode, "2")),
			at:   []time.Duration{0, 22 * time.Second},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True c:running@20s,ready,restarts=2",
			next: 25 * time.Second,
		},
		{
			name: "Always restarts after exit code 0",
			pod:  testPod(ann(AnnotationExitAfter, "5s")),
			at:   []time.Duration{0, 5 * time.Second, 10 * time.Second},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=False(ContainersNotReady) Ready=False(ContainersNotReady) c:waiting(CrashLoopBackOff),restarts=1",
			next: 20 * time.Second,
		},
		{
			name: "a long crash loop caught up reaches the 5m cap",
			pod:  testPod(ann(AnnotationExitAfter, "0s"), ann(AnnotationExitCode, "1")),
			at:   []time.Duration{0, time.Hour},
			// restarts at 0, 10, 30, 70, 150, 310, 610, then every 300s: 3310 is the 16th
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=False(ContainersNotReady) Ready=False(ContainersNotReady) c:waiting(CrashLoopBackOff),restarts=16",
			next: 3610 * time.Second,
		},
		{
			name:   "graceful deletion: the containers exit cleanly at once",
			pod:    testPod(deleting(30, t0.Add(40*time.Second))),
			at:     []time.Duration{0, 10 * time.Second},
			want:   "Succeeded PodReadyToStartContainers=False Initialized=True ContainersReady=False(PodCompleted) Ready=False(PodCompleted) c:terminated(0,Completed)@10s",
			next:   -1,
			delete: true,
		},
		{
			name: "graceful deletion: a stop delay past the grace period waits for it",
			pod:  testPod(deleting(30, t0.Add(40*time.Second)), ann(AnnotationStopDelay, "1m")),
			at:   []time.Duration{0, 10 * time.Second},
			want: "Running PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True c:running@0s,ready",
			next: 40 * time.Second,
		},
		{
			name:   "graceful deletion: killed at the end",
			pod:    testPod(deleting(30, t0.Add(40*time.Second)), ann(AnnotationStopDelay, "30s")),
			at:     []time.Duration{0, 45 * time.Second},
			want:   "Failed PodReadyToStartContainers=False Initialized=True ContainersReady=False(ContainersNotReady) Ready=False(ContainersNotReady) c:terminated(137,Error)@40s",
			next:   -1,
			delete: true,
		},
		{
			name:   "graceful deletion: stop delay exits cleanly",
			pod:    testPod(deleting(30, t0.Add(40*time.Second)), ann(AnnotationStopDelay, "1s")),
			at:     []time.Duration{0, 11 * time.Second},
			want:   "Succeeded PodReadyToStartContainers=False Initialized=True ContainersReady=False(PodCompleted) Ready=False(PodCompleted) c:terminated(0,Completed)@11s",
			next:   -1,
			delete: true,
		},
		{
			name:   "deletion with grace 0",
			pod:    testPod(deleting(0, t0)),
			at:     []time.Duration{0, time.Second},
			want:   "Failed PodReadyToStartContainers=False Initialized=True ContainersReady=False(ContainersNotReady) Ready=False(ContainersNotReady) c:terminated(137,Error)@1s",
			next:   -1,
			delete: true,
		},
		{
			name:   "deletion of a pod never started here",
			pod:    testPod(deleting(30, t0.Add(30*time.Second))),
			at:     []time.Duration{time.Second},
			want:   "Pending",
			next:   -1,
			delete: true,
		},
		{
			name:   "deletion with nothing running goes at once",
			pod:    testPod(deleting(30, t0.Add(30*time.Second)), ann(AnnotationStartDelay, "1m")),
			at:     []time.Duration{0, time.Second},
			want:   "Failed PodReadyToStartContainers=False Initialized=True ContainersReady=False(ContainersNotReady) Ready=False(ContainersNotReady) c:waiting(ContainerCreating)",
			next:   -1,
			delete: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pod *corev1.Pod
			var d decision
			if tt.pod.DeletionTimestamp != nil && len(tt.at) > 1 {
				// Run up to the deletion undeleted, then delete.
				undeleted := tt.pod.DeepCopy()
				undeleted.DeletionTimestamp, undeleted.DeletionGracePeriodSeconds = nil, nil
				pod, _ = syncAt(t, undeleted, tt.at[:len(tt.at)-1]...)
				pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = tt.pod.DeletionTimestamp, tt.pod.DeletionGracePeriodSeconds
				pod, d = syncAt(t, pod, tt.at[len(tt.at)-1])
			} else {
				pod, d = syncAt(t, tt.pod, tt.at...)
			}
			if got := summary(d.status); got != tt.want {
				t.Errorf("status\n got: %s\nwant: %s", got, tt.want)
			}
			var wantNext time.Time
			if tt.next >= 0 {
				wantNext = t0.Add(tt.next)
			}
			if !d.next.Equal(wantNext) {
				t.Errorf("next = %v, want %v", d.next.Sub(t0), tt.next)
			}
			if d.delete != tt.delete {
				t.Errorf("delete = %v, want %v", d.delete, tt.delete)
			}
			// What others own is kept.
			if d.status.QOSClass != corev1.PodQOSBestEffort {
				t.Errorf("qosClass = %q", d.status.QOSClass)
			}
			if c := d.status.Conditions; len(c) == 0 || c[0].Type != corev1.PodScheduled || !c[0].LastTransitionTime.Equal(&metav1.Time{Time: t0.Add(-time.Minute)}) {
				t.Errorf("PodScheduled not kept: %+v", c)
			}
			_ = pod
		})
	}
}

func TestDecideStatusFields(t *testing.T) {
	pod, d := syncAt(t, testPod(ann(AnnotationReadyAfter, "1s")), 0, 1500*time.Millisecond)
	st := d.status
	if st.PodIP != "10.42.0.2" || len(st.PodIPs) != 1 || st.PodIPs[0].IP != "10.42.0.2" {
		t.Errorf("podIP %q %v", st.PodIP, st.PodIPs)
	}
	if st.HostIP != "172.16.0.1" || len(st.HostIPs) != 1 {
		t.Errorf("hostIP %q %v", st.HostIP, st.HostIPs)
	}
	if st.StartTime == nil || !st.StartTime.Time.Equal(t0) {
		t.Errorf("startTime %v", st.StartTime)
	}
	if st.ObservedGeneration != 1 {
		t.Errorf("observedGeneration %d", st.ObservedGeneration)
	}
	cs := st.ContainerStatuses[0]
	if !strings.HasPrefix(cs.ContainerID, "sim://") || !strings.HasPrefix(cs.ImageID, "sim://") || cs.Image != "nginx" {
		t.Errorf("container status %+v", cs)
	}
	if cs.Started == nil || !*cs.Started || !cs.Ready {
		t.Errorf("started %v ready %v", cs.Started, cs.Ready)
	}
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady && !c.LastTransitionTime.Time.Equal(t0.Add(time.Second)) {
			t.Errorf("Ready transition at %v, want t0+1s (times are whole seconds)", c.LastTransitionTime.Sub(t0))
		}
	}
	_ = pod

	// Host network: the pod's address is the node's.
	hn := testPod()
	hn.Spec.HostNetwork = true
	d = decide(hn, podEnv{hostIP: "172.16.0.1"}, t0)
	if d.status.PodIP != "172.16.0.1" {
		t.Errorf("hostNetwork podIP %q", d.status.PodIP)
	}
	// No address free: nothing changes, try again soon.
	d = decide(testPod(), podEnv{hostIP: "172.16.0.1"}, t0)
	if d.status.StartTime != nil || !d.next.Equal(t0.Add(time.Second)) {
		t.Errorf("no address: %s next %v", summary(d.status), d.next)
	}
}

func TestGateMessages(t *testing.T) {
	_, d := syncAt(t, testPod(gate("a.io/x"), gate("a.io/y"), condition("a.io/y", corev1.ConditionFalse)), 0)
	for _, c := range d.status.Conditions {
		if c.Type == corev1.PodReady {
			want := `corresponding condition of pod readiness gate "a.io/x" does not exist., the status of pod readiness gate "a.io/y" is not "True", but False`
			if c.Message != want {
				t.Errorf("message %q\nwant %q", c.Message, want)
			}
		}
	}
}

func TestCrashLoopMessage(t *testing.T) {
	_, d := syncAt(t, testPod(ann(AnnotationExitAfter, "1s"), ann(AnnotationExitCode, "1")), 0, time.Second, 2*time.Second)
	w := d.status.ContainerStatuses[0].State.Waiting
	if w == nil || w.Message != "back-off 10s restarting failed container=c pod=p_ns(uid-1)" {
		t.Fatalf("waiting %+v", w)
	}
	last := d.status.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 1 || last.Reason != "Error" {
		t.Errorf("lastState %+v", last)
	}
}

func TestCrashBackoff(t *testing.T) {
	short := &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(t0), FinishedAt: metav1.NewTime(t0.Add(time.Second))}
	long := &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(t0), FinishedAt: metav1.NewTime(t0.Add(10 * time.Minute))}
	for _, tt := range []struct {
		restarts int32
		last     *corev1.ContainerStateTerminated
		want     time.Duration
	}{
		{0, short, 0},
		{1, short, 10 * time.Second},
		{2, short, 20 * time.Second},
		{3, short, 40 * time.Second},
		{5, short, 160 * time.Second},
		{6, short, 5 * time.Minute},
		{100, short, 5 * time.Minute},
		{7, long, 0},
	} {
		if got := crashBackoff(tt.restarts, tt.last); got != tt.want {
			t.Errorf("crashBackoff(%d) = %v, want %v", tt.restarts, got, tt.want)
		}
	}
}

func TestParseBehaviour(t *testing.T) {
	b := parseBehaviour(map[string]string{AnnotationExitAfter: "1.5", AnnotationExitCode: " 3 ", AnnotationReadyAfter: "-1s", AnnotationStartDelay: "bad"})
	if !b.exits || b.exitAfter != 1500*time.Millisecond || b.exitCode != 3 || b.readyAfter != 0 || b.startDelay != 0 || b.stopDelay != 0 {
		t.Errorf("%+v", b)
	}
}
