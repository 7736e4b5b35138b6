package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

const forbiddenPrefix = "spec: Forbidden: pod updates may not change fields other than " +
	"`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`," +
	"`spec.tolerations` (only additions to existing tolerations)," +
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"

func TestValidatePodSpecUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		old    func(*corev1.PodSpec)
		mutate func(*corev1.PodSpec)
		want   string // "" for no error; a prefix otherwise
	}{
		{"no change", nil, func(*corev1.PodSpec) {}, ""},
		{"image", nil, func(s *corev1.PodSpec) { s.Containers[0].Image = "nginx:1.28" }, ""},
		{"set activeDeadlineSeconds", nil, func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](30) }, ""},
		{"lower activeDeadlineSeconds", func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](30) },
			func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](10) }, ""},
		{"raise activeDeadlineSeconds", func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](30) },
			func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](60) },
			"spec.activeDeadlineSeconds: Invalid value: 60: must be less than or equal to previous value"},
		{"unset activeDeadlineSeconds", func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](30) },
			func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = nil },
			"spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"},
		{"add toleration", nil, func(s *corev1.PodSpec) {
			s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
		}, ""},
		{"change tolerationSeconds", nil, func(s *corev1.PodSpec) { s.Tolerations[0].TolerationSeconds = ptr.To[int64](10) }, ""},
		{"remove toleration", nil, func(s *corev1.PodSpec) { s.Tolerations = nil },
			"spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"},
		{"grace period from negative to 1", func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](-1) },
			func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](1) }, ""},
		{"add container", nil, func(s *corev1.PodSpec) { s.Containers = append(s.Containers, s.Containers[0]) },
			"spec.containers: Forbidden: pod updates may not add or remove containers"},
		{"change port", nil, func(s *corev1.PodSpec) { s.Containers[0].Ports[0].ContainerPort = 81 }, forbiddenPrefix},
		{"change grace period", nil, func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](5) }, forbiddenPrefix},
		{"change nodeName", nil, func(s *corev1.PodSpec) { s.NodeName = "n1" }, forbiddenPrefix},
		{"remove scheduling gate", func(s *corev1.PodSpec) { s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "a"}} },
			func(s *corev1.PodSpec) { s.SchedulingGates = nil }, ""},
		{"add scheduling gate", nil, func(s *corev1.PodSpec) { s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "a"}} },
			"spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'a'"},
		{"gated pod gains node selector", func(s *corev1.PodSpec) { s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "a"}} },
			func(s *corev1.PodSpec) { s.NodeSelector["zone"] = "a" }, ""},
		{"gated pod changes node selector", func(s *corev1.PodSpec) { s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "a"}} },
			func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{} },
			"spec.nodeSelector: Invalid value: {}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := validSpec()
			if tc.old != nil {
				tc.old(&old)
			}
			n := *old.DeepCopy()
			tc.mutate(&n)
			errs := errStrings(ValidatePodSpecUpdate(&n, &old, field.NewPath("spec")))
			if tc.want == "" {
				if len(errs) != 0 {
					t.Errorf("unexpected errors: %q", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.HasPrefix(errs[0], tc.want) {
				t.Errorf("got %q\nwant prefix %q", errs, tc.want)
			}
		})
	}
}

func TestValidateEphemeralContainersUpdate(t *testing.T) {
	ec := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", ImagePullPolicy: "Always", TerminationMessagePolicy: "File"}}
	old := &corev1.Pod{Spec: validSpec()}
	old.Name = "p"
	added := old.DeepCopy()
	added.Spec.EphemeralContainers = []corev1.EphemeralContainer{ec}
	if errs := ValidatePodEphemeralContainersUpdate(added, old); len(errs) != 0 {
		t.Errorf("adding: %q", errStrings(errs))
	}
	removed := old.DeepCopy()
	if errs := errStrings(ValidatePodEphemeralContainersUpdate(removed, added)); len(errs) != 1 ||
		errs[0] != "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debug\" may not be removed\n" {
		t.Errorf("removing: %q", errs)
	}
	withPorts := added.DeepCopy()
	withPorts.Spec.EphemeralContainers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: "TCP"}}
	found := false
	for _, e := range errStrings(ValidatePodEphemeralContainersUpdate(withPorts, old)) {
		found = found || e == "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container"
	}
	if !found {
		t.Errorf("ports on an ephemeral container not rejected")
	}
}
