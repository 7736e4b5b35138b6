package podstatus

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestTerminate(t *testing.T) {
	running := corev1.ContainerStatus{Name: "a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Ready: true}
	exited := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "b", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	tests := []struct {
		name  string
		st    corev1.PodStatus
		phase corev1.PodPhase
	}{
		{"running container: Failed", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running, exited(0)}}, corev1.PodFailed},
		{"all exited 0: Succeeded", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{exited(0)}}, corev1.PodSucceeded},
		{"one exited 1: Failed", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{exited(0), exited(1)}}, corev1.PodFailed},
		{"never started: Failed", corev1.PodStatus{Phase: corev1.PodPending}, corev1.PodFailed},
		{"terminal stays", corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{exited(1)}}, corev1.PodSucceeded},
	}
	for _, tt := range tests {
		st := *tt.st.DeepCopy()
		Terminate(&st)
		if st.Phase != tt.phase {
			t.Errorf("%s: phase %s, want %s", tt.name, st.Phase, tt.phase)
		}
		for _, cs := range st.ContainerStatuses {
			if tt.phase != corev1.PodSucceeded && cs.Name == "a" && (cs.State.Terminated == nil || cs.State.Terminated.Reason != "ContainerStatusUnknown" || cs.State.Terminated.ExitCode != 137 || cs.Ready) {
				t.Errorf("%s: the running container's status %+v", tt.name, cs)
			}
		}
	}
}
