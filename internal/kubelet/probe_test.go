package kubelet

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestProbeDue(t *testing.T) {
	p := &corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2}
	started := t0
	tests := []struct {
		name string
		last time.Time
		now  time.Time
		want bool
	}{
		{"before the initial delay", time.Time{}, t0.Add(4 * time.Second), false},
		{"after it, never run", time.Time{}, t0.Add(5 * time.Second), true},
		{"within the period", t0.Add(5 * time.Second), t0.Add(6 * time.Second), false},
		{"a period later", t0.Add(5 * time.Second), t0.Add(7 * time.Second), true},
	}
	for _, tt := range tests {
		if got := probeDue(p, probeState{LastRun: tt.last}, started, tt.now); got != tt.want {
			t.Errorf("%s: due = %v", tt.name, got)
		}
	}
	// The default period is 10s.
	if probeDue(&corev1.Probe{}, probeState{LastRun: t0}, t0, t0.Add(9*time.Second)) {
		t.Error("due before the default period")
	}
}

func TestProbeRecord(t *testing.T) {
	p := &corev1.Probe{SuccessThreshold: 2, FailureThreshold: 2}
	var s probeState
	type step struct {
		ok                bool
		succeeded, failed bool
	}
	for i, st := range []step{
		{ok: true},
		{ok: true, succeeded: true},
		{ok: false, succeeded: true}, // one failure is below the threshold
		{ok: false, failed: true},
		{ok: true, failed: true},
		{ok: true, succeeded: true},
	} {
		s = probeRecord(p, s, st.ok, t0.Add(time.Duration(i)*time.Second))
		if s.Succeeded != st.succeeded || s.Failed != st.failed {
			t.Errorf("step %d: %+v", i, s)
		}
	}
	// Defaults: one success, three failures.
	s = probeRecord(&corev1.Probe{}, probeState{}, true, t0)
	if !s.Succeeded {
		t.Error("default success threshold is 1")
	}
	for range 2 {
		s = probeRecord(&corev1.Probe{}, s, false, t0)
	}
	if s.Failed {
		t.Error("failed after 2 failures; the default threshold is 3")
	}
}

func TestProbesInPlanAndStatus(t *testing.T) {
	probed := func(p *corev1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
		p.Spec.Containers[0].LivenessProbe = &corev1.Probe{}
	}
	pod := testPod(corev1.RestartPolicyAlways, probed)
	obs := observed{Sandbox: ready(), Containers: runs(running("c1", 0))}

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
