package probes

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

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

// TestHTTPGetRequestKeepsTheQuery: a path with a query reaches the server
// as a path and a query (upstream's conformance hooks ask netexec for
// /dial?host=…), not as one escaped path.
func TestHTTPGetRequestKeepsTheQuery(t *testing.T) {
	pod := &corev1.Pod{}
	for path, want := range map[string]string{
		"/dial?host=10.0.0.1&port=8080&request=echo%3Fmsg%3Dprestop": "http://10.0.0.2:8080/dial?host=10.0.0.1&port=8080&request=echo%3Fmsg%3Dprestop",
		"/healthz": "http://10.0.0.2:8080/healthz",
		"":         "http://10.0.0.2:8080",
	} {
		req, err := httpGetRequest(t.Context(), pod, &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}, "10.0.0.2", "")
		if err != nil {
			t.Fatalf("%q: %v", path, err)
		}
		if got := req.URL.String(); got != want {
			t.Errorf("%q: %s, want %s", path, got, want)
		}
	}
}
