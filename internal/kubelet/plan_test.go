package kubelet

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"plainkube.dev/plainkube/internal/kubelet/runtime"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func testPod(policy corev1.RestartPolicy, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"},
		Spec: corev1.PodSpec{RestartPolicy: policy, Containers: []corev1.Container{
			{Name: "a", Image: "img"},
		}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func ready() *runtime.Sandbox { return &runtime.Sandbox{ID: "sb", Ready: true} }

func runs(r ...runtime.Container) map[string][]runtime.Container {
	return map[string][]runtime.Container{"a": r}
}

func exited(id string, attempt uint32, code int32, finished time.Time) runtime.Container {
	return runtime.Container{ID: id, Name: "a", Attempt: attempt, State: runtime.Exited, ExitCode: code,
		StartedAt: finished.Add(-time.Second), FinishedAt: finished}
}

func running(id string, attempt uint32) runtime.Container {
	return runtime.Container{ID: id, Name: "a", Attempt: attempt, State: runtime.Running, StartedAt: t0.Add(-time.Minute)}
}

func deleting(grace int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		ts := metav1.NewTime(t0)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name     string
		pod      *corev1.Pod
		obs      observed
		want     []string
		wantNext time.Time
	}{
		{name: "new pod gets a sandbox", pod: testPod(corev1.RestartPolicyAlways),
			want: []string{"RunSandbox #0"}},
		{name: "dead sandbox is replaced", pod: testPod(corev1.RestartPolicyAlways),
			obs:  observed{Pod: runtime.Pod{Sandbox: &runtime.Sandbox{ID: "old", Attempt: 2}}},
			want: []string{"StopSandbox old", "RemoveSandbox old", "RunSandbox #3"}},
		{name: "then the container starts", pod: testPod(corev1.RestartPolicyAlways),
			obs:  observed{Pod: runtime.Pod{Sandbox: ready()}},
			want: []string{"StartContainer a #0"}},
		{name: "running: nothing to do", pod: testPod(corev1.RestartPolicyAlways),
			obs: observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(running("c1", 0))}}},
		{name: "missing image waits", pod: testPod(corev1.RestartPolicyAlways),
			obs:      observed{Pod: runtime.Pod{Sandbox: ready(), MissingImages: map[string]bool{"img": true}}},
			wantNext: t0.Add(imageRecheck)},
		{name: "first crash restarts at once", pod: testPod(corev1.RestartPolicyAlways),
			obs:  observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(exited("c1", 0, 1, t0))}},
			want: []string{"StartContainer a #1"}},
		{name: "second crash backs off 10s", pod: testPod(corev1.RestartPolicyAlways),
			obs:      observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(exited("c2", 1, 1, t0.Add(-3*time.Second)), exited("c1", 0, 1, t0.Add(-5*time.Second)))}},
			wantNext: t0.Add(7 * time.Second)},
		{name: "back-off over: restart, dropping the oldest run", pod: testPod(corev1.RestartPolicyAlways),
			obs: observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(
				exited("c3", 2, 1, t0.Add(-21*time.Second)), exited("c2", 1, 1, t0.Add(-40*time.Second)), exited("c1", 0, 1, t0.Add(-50*time.Second)))}},
			want: []string{"RemoveContainer c1", "StartContainer a #3"}},
		{name: "OnFailure does not restart success", pod: testPod(corev1.RestartPolicyOnFailure),
			obs:  observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(exited("c1", 0, 0, t0))}},
			want: []string{"StopSandbox sb"}},
		{name: "Never: done, the sandbox stops", pod: testPod(corev1.RestartPolicyNever),
			obs:  observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(exited("c1", 0, 1, t0))}},
			want: []string{"StopSandbox sb"}},
		{name: "finished pod with stopped sandbox: nothing", pod: testPod(corev1.RestartPolicyNever),
			obs: observed{Pod: runtime.Pod{Sandbox: &runtime.Sandbox{ID: "sb"}, Containers: runs(exited("c1", 0, 1, t0))}}},
		{name: "created but not started: start afresh", pod: testPod(corev1.RestartPolicyAlways),
			obs:  observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(runtime.Container{ID: "c1", Name: "a", State: runtime.Created})}},
			want: []string{"RemoveContainer c1", "StartContainer a #0"}},
		{name: "deletion stops with the grace period, then deletes", pod: testPod(corev1.RestartPolicyAlways, deleting(7)),
			obs:  observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(running("c1", 0))}},
			want: []string{"StopContainer a c1 grace=7s", "StopSandbox sb", "RemoveSandbox sb", "DeletePod"}},
		{name: "deletion of a pod never started", pod: testPod(corev1.RestartPolicyAlways, deleting(30)),
			want: []string{"DeletePod"}},
		{name: "an ephemeral container starts beside the running ones", pod: testPod(corev1.RestartPolicyAlways, withDebugger),
			obs:  observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(running("c1", 0))}},
			want: []string{"StartContainer debugger #0"}},
		{name: "an ephemeral container that exited is not restarted", pod: testPod(corev1.RestartPolicyAlways, withDebugger),
			obs: observed{Pod: runtime.Pod{Sandbox: ready(), Containers: map[string][]runtime.Container{
				"a": {running("c1", 0)}, "debugger": {{ID: "d1", Name: "debugger", State: runtime.Exited, ExitCode: 1, FinishedAt: t0}}}}}},
		{name: "deletion stops ephemeral containers too", pod: testPod(corev1.RestartPolicyAlways, withDebugger, deleting(3)),
			obs: observed{Pod: runtime.Pod{Sandbox: ready(), Containers: map[string][]runtime.Container{
				"a": {running("c1", 0)}, "debugger": {{ID: "d1", Name: "debugger", State: runtime.Running}}}}},
			want: []string{"StopContainer a c1 grace=3s", "StopContainer debugger d1 grace=3s", "StopSandbox sb", "RemoveSandbox sb", "DeletePod"}},
		{name: "old sandboxes are removed", pod: testPod(corev1.RestartPolicyAlways),
			obs:  observed{Pod: runtime.Pod{Sandbox: ready(), Others: []string{"old"}, Containers: runs(running("c1", 0))}},
			want: []string{"StopSandbox old", "RemoveSandbox old"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts, next := plan(tt.pod, tt.obs, t0)
			var got []string
			for _, a := range acts {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("actions = %q, want %q", got, tt.want)
			}
			if !next.Equal(tt.wantNext) {
				t.Errorf("next = %v, want %v", next, tt.wantNext)
			}
		})
	}
}

func withDebugger(p *corev1.Pod) {
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "img"}}}
}

func TestRestartDelay(t *testing.T) {
	for attempt, want := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute} {
		if got := restartDelay(exited("c", uint32(attempt), 1, t0)); got != want {
			t.Errorf("attempt %d: delay %s, want %s", attempt, got, want)
		}
	}
	long := exited("c", 5, 1, t0)
	long.StartedAt = t0.Add(-time.Hour)
	if got := restartDelay(long); got != 0 {
		t.Errorf("after a long run: delay %s, want 0", got)
	}
	// A run whose start failed never ran: its back-off grows.
	failed := exited("c", 2, 128, t0)
	failed.StartedAt = time.Time{}
	if got := restartDelay(failed); got != 20*time.Second {
		t.Errorf("after a failed start: delay %s, want 20s", got)
	}
}

func TestPodStatus(t *testing.T) {
	env := nodeEnv{HostIP: "10.0.0.5"}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		obs       observed
		phase     corev1.PodPhase
		state     string // running, waiting:<reason>, terminated:<code>
		restarts  int32
		lastTerm  bool
		podReady  corev1.ConditionStatus
		wantPodIP string
	}{
		{name: "creating", pod: testPod(corev1.RestartPolicyAlways), obs: observed{Pod: runtime.Pod{Sandbox: ready()}},
			phase: corev1.PodPending, state: "waiting:ContainerCreating", podReady: corev1.ConditionFalse},
		{name: "running", pod: testPod(corev1.RestartPolicyAlways, func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			obs:   observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(running("c1", 0))}},
			phase: corev1.PodRunning, state: "running", podReady: corev1.ConditionTrue, wantPodIP: "10.0.0.5"},
		{name: "pod IP from the sandbox", pod: testPod(corev1.RestartPolicyAlways),
			obs:   observed{Pod: runtime.Pod{Sandbox: &runtime.Sandbox{ID: "sb", Ready: true, IP: "10.42.0.7"}, Containers: runs(running("c1", 0))}},
			phase: corev1.PodRunning, state: "running", podReady: corev1.ConditionTrue, wantPodIP: "10.42.0.7"},
		{name: "crash loop", pod: testPod(corev1.RestartPolicyAlways),
			obs:   observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(exited("c2", 1, 2, t0.Add(-time.Second)), exited("c1", 0, 2, t0.Add(-2*time.Second)))}},
			phase: corev1.PodRunning, state: "waiting:CrashLoopBackOff", restarts: 1, lastTerm: true, podReady: corev1.ConditionFalse},
		{name: "failed", pod: testPod(corev1.RestartPolicyNever),
			obs:   observed{Pod: runtime.Pod{Sandbox: &runtime.Sandbox{ID: "sb"}, Containers: runs(exited("c1", 0, 1, t0))}},
			phase: corev1.PodFailed, state: "terminated:1", podReady: corev1.ConditionFalse},
		{name: "succeeded", pod: testPod(corev1.RestartPolicyOnFailure),
			obs:   observed{Pod: runtime.Pod{Sandbox: &runtime.Sandbox{ID: "sb"}, Containers: runs(exited("c1", 0, 0, t0))}},
			phase: corev1.PodSucceeded, state: "terminated:0", podReady: corev1.ConditionFalse},
		{name: "cannot be created", pod: testPod(corev1.RestartPolicyAlways), obs: observed{Pod: runtime.Pod{Sandbox: ready()}, StartErrors: map[string]corev1.ContainerStateWaiting{"a": {Reason: "CreateContainerConfigError", Message: "configmap \"x\" not found"}}},
			phase: corev1.PodPending, state: "waiting:CreateContainerConfigError", podReady: corev1.ConditionFalse},
		{name: "missing image", pod: testPod(corev1.RestartPolicyAlways), obs: observed{Pod: runtime.Pod{Sandbox: ready(), MissingImages: map[string]bool{"img": true}}},
			phase: corev1.PodPending, state: "waiting:ErrImagePull", podReady: corev1.ConditionFalse},
		{name: "missing image, seen before", pod: testPod(corev1.RestartPolicyAlways, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}}}
		}), obs: observed{Pod: runtime.Pod{Sandbox: ready(), MissingImages: map[string]bool{"img": true}}},
			phase: corev1.PodPending, state: "waiting:ImagePullBackOff", podReady: corev1.ConditionFalse},
		{name: "missing image, pull policy Never", pod: testPod(corev1.RestartPolicyAlways, func(p *corev1.Pod) {
			p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
		}), obs: observed{Pod: runtime.Pod{Sandbox: ready(), MissingImages: map[string]bool{"img": true}}},
			phase: corev1.PodPending, state: "waiting:ErrImageNeverPull", podReady: corev1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := podStatus(tt.pod, tt.obs, env, t0)
			if st.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", st.Phase, tt.phase)
			}
			cs := st.ContainerStatuses[0]
			var state string
			switch {
			case cs.State.Running != nil:
				state = "running"
			case cs.State.Waiting != nil:
				state = "waiting:" + cs.State.Waiting.Reason
			case cs.State.Terminated != nil:
				state = "terminated:" + string(rune('0'+cs.State.Terminated.ExitCode))
			}
			if state != tt.state {
				t.Errorf("state = %s, want %s", state, tt.state)
			}
			if cs.RestartCount != tt.restarts || (cs.LastTerminationState.Terminated != nil) != tt.lastTerm {
				t.Errorf("restarts = %d, lastState = %+v", cs.RestartCount, cs.LastTerminationState)
			}
			if cs.State.Running != nil && cs.ContainerID != "containerd://c1" {
				t.Errorf("containerID = %q", cs.ContainerID)
			}
			var readyCond corev1.ConditionStatus
			for _, c := range st.Conditions {
				if c.Type == corev1.PodReady {
					readyCond = c.Status
				}
			}
			if readyCond != tt.podReady {
				t.Errorf("Ready = %s, want %s", readyCond, tt.podReady)
			}
			if st.HostIP != "10.0.0.5" || st.StartTime == nil || st.PodIP != tt.wantPodIP {
				t.Errorf("hostIP %q podIP %q startTime %v", st.HostIP, st.PodIP, st.StartTime)
			}
		})
	}
}

func TestPodStatusKeepsTransitionTimes(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways)
	obs := observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(running("c1", 0))}}
	pod.Status = podStatus(pod, obs, nodeEnv{}, t0)
	again := podStatus(pod, obs, nodeEnv{}, t0.Add(time.Minute))
	for i, c := range again.Conditions {
		if !c.LastTransitionTime.Equal(&pod.Status.Conditions[i].LastTransitionTime) {
			t.Errorf("%s moved from %v to %v", c.Type, pod.Status.Conditions[i].LastTransitionTime, c.LastTransitionTime)
		}
	}
}

// withInit adds init containers i1 and i2 before container a.
func withInit(p *corev1.Pod) {
	p.Spec.InitContainers = []corev1.Container{{Name: "i1", Image: "img"}, {Name: "i2", Image: "img"}}
}

func initRun(name, id string, attempt uint32, state runtime.State, code int32, finished time.Time) runtime.Container {
	return runtime.Container{ID: id, Name: name, Attempt: attempt, State: state, ExitCode: code, StartedAt: finished.Add(-time.Second), FinishedAt: finished}
}

func obsOf(rs ...runtime.Container) observed {
	o := observed{Pod: runtime.Pod{Sandbox: ready(), Containers: map[string][]runtime.Container{}}}
	for _, r := range rs {
		o.Containers[r.Name] = append(o.Containers[r.Name], r)
	}
	return o
}

func TestPlanInitContainers(t *testing.T) {
	tests := []struct {
		name     string
		policy   corev1.RestartPolicy
		obs      observed
		want     []string
		wantNext time.Time
	}{
		{name: "first init container starts first", policy: corev1.RestartPolicyAlways, obs: obsOf(),
			want: []string{"StartContainer i1 #0"}},
		{name: "waits while it runs", policy: corev1.RestartPolicyAlways,
			obs: obsOf(initRun("i1", "x1", 0, runtime.Running, 0, t0))},
		{name: "then the second", policy: corev1.RestartPolicyAlways,
			obs:  obsOf(initRun("i1", "x1", 0, runtime.Exited, 0, t0)),
			want: []string{"StartContainer i2 #0"}},
		{name: "then the containers", policy: corev1.RestartPolicyAlways,
			obs:  obsOf(initRun("i1", "x1", 0, runtime.Exited, 0, t0), initRun("i2", "x2", 0, runtime.Exited, 0, t0)),
			want: []string{"StartContainer a #0"}},
		{name: "a failed init container restarts (Always)", policy: corev1.RestartPolicyAlways,
			obs:  obsOf(initRun("i1", "x1", 0, runtime.Exited, 3, t0)),
			want: []string{"StartContainer i1 #1"}},
		{name: "with back-off", policy: corev1.RestartPolicyOnFailure,
			obs:      obsOf(initRun("i1", "x2", 1, runtime.Exited, 3, t0.Add(-4*time.Second)), initRun("i1", "x1", 0, runtime.Exited, 3, t0.Add(-6*time.Second))),
			wantNext: t0.Add(6 * time.Second)},
		{name: "Never: the pod fails, the sandbox stops", policy: corev1.RestartPolicyNever,
			obs:  obsOf(initRun("i1", "x1", 0, runtime.Exited, 3, t0)),
			want: []string{"StopSandbox sb"}},
		{name: "initialized once the containers ran, whatever the init runs", policy: corev1.RestartPolicyAlways,
			obs: obsOf(running("c1", 0))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts, next := plan(testPod(tt.policy, withInit), tt.obs, t0)
			var got []string
			for _, a := range acts {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("actions = %q, want %q", got, tt.want)
			}
			if !next.Equal(tt.wantNext) {
				t.Errorf("next = %v, want %v", next, tt.wantNext)
			}
		})
	}
}

func TestPodStatusInitContainers(t *testing.T) {
	state := func(cs corev1.ContainerStatus) string {
		switch {
		case cs.State.Running != nil:
			return "running"
		case cs.State.Waiting != nil:
			return "waiting:" + cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			return fmt.Sprintf("terminated:%d", cs.State.Terminated.ExitCode)
		}
		return ""
	}
	tests := []struct {
		name        string
		policy      corev1.RestartPolicy
		obs         observed
		phase       corev1.PodPhase
		states      string // i1 i2 a
		initialized string
	}{
		{name: "nothing ran", policy: corev1.RestartPolicyAlways, obs: obsOf(), phase: corev1.PodPending,
			states: "waiting:PodInitializing waiting:PodInitializing waiting:PodInitializing", initialized: "False: containers with incomplete status: [i1 i2]"},
		{name: "first running", policy: corev1.RestartPolicyAlways, obs: obsOf(initRun("i1", "x1", 0, runtime.Running, 0, t0)), phase: corev1.PodPending,
			states: "running waiting:PodInitializing waiting:PodInitializing", initialized: "False: containers with incomplete status: [i1 i2]"},
		{name: "first done", policy: corev1.RestartPolicyAlways, obs: obsOf(initRun("i1", "x1", 0, runtime.Exited, 0, t0)), phase: corev1.PodPending,
			states: "terminated:0 waiting:PodInitializing waiting:PodInitializing", initialized: "False: containers with incomplete status: [i2]"},
		{name: "all done", policy: corev1.RestartPolicyAlways,
			obs:   obsOf(initRun("i1", "x1", 0, runtime.Exited, 0, t0), initRun("i2", "x2", 0, runtime.Exited, 0, t0)),
			phase: corev1.PodPending, states: "terminated:0 terminated:0 waiting:ContainerCreating", initialized: "True"},
		{name: "init crash loop", policy: corev1.RestartPolicyAlways,
			obs:   obsOf(initRun("i1", "x2", 1, runtime.Exited, 3, t0.Add(-time.Second)), initRun("i1", "x1", 0, runtime.Exited, 3, t0.Add(-2*time.Second))),
			phase: corev1.PodPending, states: "waiting:CrashLoopBackOff waiting:PodInitializing waiting:PodInitializing", initialized: "False: containers with incomplete status: [i1 i2]"},
		{name: "init failed, Never", policy: corev1.RestartPolicyNever,
			obs:   obsOf(initRun("i1", "x1", 0, runtime.Exited, 3, t0)),
			phase: corev1.PodFailed, states: "terminated:3 waiting:PodInitializing waiting:PodInitializing", initialized: "False: containers with incomplete status: [i1 i2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := podStatus(testPod(tt.policy, withInit), tt.obs, nodeEnv{}, t0)
			if st.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", st.Phase, tt.phase)
			}
			var states []string
			for _, cs := range slices.Concat(st.InitContainerStatuses, st.ContainerStatuses) {
				states = append(states, state(cs))
			}
			if got := strings.Join(states, " "); got != tt.states {
				t.Errorf("states = %s, want %s", got, tt.states)
			}
			for _, c := range st.Conditions {
				if c.Type != corev1.PodInitialized {
					continue
				}
				got := string(c.Status)
				if c.Message != "" {
					got += ": " + c.Message
				}
				if got != tt.initialized {
					t.Errorf("Initialized = %s, want %s", got, tt.initialized)
				}
			}
		})
	}
}

func TestPlanSidecars(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	withSidecar := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "side", Image: "img", RestartPolicy: &always}, {Name: "i2", Image: "img"}}
	}
	started := func(r runtime.Container) runtime.Container { r.StartedAt = t0.Add(-time.Minute); return r }
	tests := []struct {
		name   string
		policy corev1.RestartPolicy
		obs    observed
		want   []string
	}{
		{name: "the sidecar starts first", obs: obsOf(), want: []string{"StartContainer side #0"}},
		{name: "once it has started, the next init container runs",
			obs: obsOf(started(initRun("side", "s1", 0, runtime.Running, 0, time.Time{}))), want: []string{"StartContainer i2 #0"}},
		{name: "then the containers, the sidecar still running",
			obs:  obsOf(started(initRun("side", "s1", 0, runtime.Running, 0, time.Time{})), initRun("i2", "x2", 0, runtime.Exited, 0, t0)),
			want: []string{"StartContainer a #0"}},
		{name: "a sidecar that exits restarts, even with success and policy Never", policy: corev1.RestartPolicyNever,
			obs:  obsOf(initRun("side", "s1", 0, runtime.Exited, 0, t0), initRun("i2", "x2", 0, runtime.Exited, 0, t0), running("c1", 0)),
			want: []string{"StartContainer side #1"}},
		{name: "when the containers are done, the sidecar and sandbox stop", policy: corev1.RestartPolicyNever,
			obs:  obsOf(started(initRun("side", "s1", 0, runtime.Running, 0, time.Time{})), initRun("i2", "x2", 0, runtime.Exited, 0, t0), exited("c1", 0, 0, t0)),
			want: []string{"StopContainer side s1 grace=30s", "StopSandbox sb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := tt.policy
			if policy == "" {
				policy = corev1.RestartPolicyAlways
			}
			acts, _ := plan(testPod(policy, withSidecar), tt.obs, t0)
			var got []string
			for _, a := range acts {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("actions = %q, want %q", got, tt.want)
			}
		})
	}
	// With a startup probe, the next init container waits for it.
	probed := func(p *corev1.Pod) {
		withSidecar(p)
		p.Spec.InitContainers[0].StartupProbe = &corev1.Probe{}
	}
	obs := obsOf(started(initRun("side", "s1", 0, runtime.Running, 0, time.Time{})))
	if acts, _ := plan(testPod(corev1.RestartPolicyAlways, probed), obs, t0); len(acts) != 0 {
		t.Errorf("before the sidecar's startup probe succeeded: %v", acts)
	}
	obs.Started = map[string]bool{"side": true}
	if acts, _ := plan(testPod(corev1.RestartPolicyAlways, probed), obs, t0); len(acts) != 1 || acts[0].Container != "i2" {
		t.Errorf("after: %v", acts)
	}
	// On deletion the sidecar stops after the others, with what is left
	// of the grace period.
	del := func(p *corev1.Pod) {
		withSidecar(p)
		deleting(10)(p)
		p.DeletionTimestamp = &metav1.Time{Time: t0.Add(6 * time.Second)}
	}
	obs = obsOf(started(initRun("side", "s1", 0, runtime.Running, 0, time.Time{})), initRun("i2", "x2", 0, runtime.Exited, 0, t0), running("c1", 0))
	if acts, _ := plan(testPod(corev1.RestartPolicyAlways, del), obs, t0); len(acts) != 1 || acts[0].String() != "StopContainer a c1 grace=10s" {
		t.Errorf("deletion, first: %v", acts)
	}
	obs = obsOf(started(initRun("side", "s1", 0, runtime.Running, 0, time.Time{})), initRun("i2", "x2", 0, runtime.Exited, 0, t0), exited("c1", 0, 0, t0))
	if acts, _ := plan(testPod(corev1.RestartPolicyAlways, del), obs, t0); len(acts) < 1 || acts[0].String() != "StopContainer side s1 grace=6s" {
		t.Errorf("deletion, then: %v", acts)
	}
	// Status: the sidecar is ready while it runs; the pod is initialized.
	st := podStatus(testPod(corev1.RestartPolicyAlways, withSidecar),
		obsOf(started(initRun("side", "s1", 0, runtime.Running, 0, time.Time{})), initRun("i2", "x2", 0, runtime.Exited, 0, t0), running("c1", 0)), nodeEnv{}, t0)
	if !st.InitContainerStatuses[0].Ready || !st.InitContainerStatuses[1].Ready || st.Phase != corev1.PodRunning {
		t.Errorf("status = %+v", st)
	}
}

func TestProbesInPlanAndStatus(t *testing.T) {
	probed := func(p *corev1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
		p.Spec.Containers[0].LivenessProbe = &corev1.Probe{}
	}
	pod := testPod(corev1.RestartPolicyAlways, probed)
	obs := observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(running("c1", 0))}}

	// Not ready until the readiness probe succeeds.
	st := podStatus(pod, obs, nodeEnv{}, t0)
	if st.ContainerStatuses[0].Ready {
		t.Error("ready before the readiness probe succeeded")
	}
	obs.Ready = map[string]bool{"a": true}
	if st := podStatus(pod, obs, nodeEnv{}, t0); !st.ContainerStatuses[0].Ready {
		t.Error("not ready after the readiness probe succeeded")
	}

	// A failed liveness probe stops the container with the grace period.
	obs.Unhealthy = map[string]string{"a": "Container a failed liveness probe, will be restarted"}
	acts, _ := plan(pod, obs, t0)
	var got []string
	for _, a := range acts {
		got = append(got, a.String())
	}
	if want := []string{"StopContainer a c1 grace=30s"}; !slices.Equal(got, want) {
		t.Errorf("actions = %q, want %q", got, want)
	}
}

func TestActiveDeadline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	deadline := int64(30)
	pod := testPod(corev1.RestartPolicyAlways, func(p *corev1.Pod) {
		p.Spec.ActiveDeadlineSeconds = &deadline
		p.Status.StartTime = &metav1.Time{Time: t0}
	})
	obs := observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(running("c1", 0))}}
	acts, next := plan(pod, obs, t0.Add(10*time.Second))
	if len(acts) != 0 || !next.Equal(t0.Add(30*time.Second)) {
		t.Errorf("before the deadline: %v, next %v", acts, next)
	}
	acts, _ = plan(pod, obs, t0.Add(31*time.Second))
	if len(acts) != 2 || acts[0].Kind != actStopContainer || acts[1].Kind != actStopSandbox {
		t.Errorf("after the deadline: %v", acts)
	}
	st := podStatus(pod, obs, nodeEnv{}, t0.Add(31*time.Second))
	if st.Phase != corev1.PodFailed || st.Reason != "DeadlineExceeded" || st.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("status: %s %s %s", st.Phase, st.Reason, st.Message)
	}
}

func TestStartupProbeGatesStartedAndReady(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := testPod(corev1.RestartPolicyAlways, func(p *corev1.Pod) {
		p.Spec.Containers[0].StartupProbe = &corev1.Probe{}
	})
	obs := observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(running("c1", 0))}}
	st := podStatus(pod, obs, nodeEnv{}, t0).ContainerStatuses[0]
	if *st.Started || st.Ready {
		t.Errorf("before the startup probe succeeded: started %v ready %v", *st.Started, st.Ready)
	}
	obs.Started = map[string]bool{"a": true}
	st = podStatus(pod, obs, nodeEnv{}, t0).ContainerStatuses[0]
	if !*st.Started || !st.Ready {
		t.Errorf("after: started %v ready %v", *st.Started, st.Ready)
	}
	obs.Unhealthy = map[string]string{"a": "Container a failed startup probe, will be restarted"}
	acts, _ := plan(pod, obs, t0)
	if len(acts) != 1 || acts[0].Kind != actStopContainer || acts[0].Message != obs.Unhealthy["a"] {
		t.Errorf("actions: %+v", acts)
	}
}

// TestPIDTarget: an ephemeral container with a targetContainerName joins
// that running container's process namespace; a target not running is an
// error; other containers have none.
func TestPIDTarget(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, withDebugger)
	pod.Spec.EphemeralContainers[0].TargetContainerName = "a"
	up := observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(running("c1", 0))}}
	if id, err := pidTarget(pod, "debugger", up); id != "c1" || err != nil {
		t.Errorf("target of debugger: %q %v, want c1", id, err)
	}
	if id, err := pidTarget(pod, "a", up); id != "" || err != nil {
		t.Errorf("target of a: %q %v, want none", id, err)
	}
	down := observed{Pod: runtime.Pod{Sandbox: ready(), Containers: runs(exited("c1", 0, 1, t0))}}
	if _, err := pidTarget(pod, "debugger", down); err == nil {
		t.Error("an exited target: no error")
	}
}
