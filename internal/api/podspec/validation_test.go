package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// validSpec is a defaulted spec that passes validation.
func validSpec() corev1.PodSpec {
	s := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "app", Image: "nginx:1.27",
			Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
			Env:          []corev1.EnvVar{{Name: "A", Value: "1"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}},
		}},
		Volumes:      []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
		Tolerations:  []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
	}
	DefaultPodSpec(&s)
	return s
}

func errStrings(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestValidatePodSpecValid(t *testing.T) {
	s := validSpec()
	if errs := ValidatePodSpec(&s, nil, field.NewPath("spec")); len(errs) != 0 {
		t.Fatalf("valid spec: %v", errStrings(errs))
	}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: s}
	if errs := ValidatePodTemplateSpec(&tmpl, field.NewPath("spec", "template")); len(errs) != 0 {
		t.Fatalf("valid template: %v", errStrings(errs))
	}
}

func TestValidatePodSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.PodSpec)
		want   string
	}{
		{"no containers", func(s *corev1.PodSpec) { s.Containers = nil },
			"spec.containers: Required value"},
		{"container name", func(s *corev1.PodSpec) { s.Containers[0].Name = "App_1" },
			`spec.containers[0].name: Invalid value: "App_1": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"duplicate container", func(s *corev1.PodSpec) { s.Containers = append(s.Containers, s.Containers[0]) },
			`spec.containers[1].name: Duplicate value: "app"`},
		{"init container clashes with container", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "app", Image: "busybox", ImagePullPolicy: "Always", TerminationMessagePolicy: "File"}}
		}, `spec.initContainers[0].name: Duplicate value: "app"`},
		{"image required", func(s *corev1.PodSpec) { s.Containers[0].Image = "" },
			"spec.containers[0].image: Required value"},
		{"port range", func(s *corev1.PodSpec) { s.Containers[0].Ports[0].ContainerPort = 70000 },
			"spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"},
		{"port protocol", func(s *corev1.PodSpec) { s.Containers[0].Ports[0].Protocol = "HTTP" },
			`spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`},
		{"duplicate port name", func(s *corev1.PodSpec) {
			s.Containers[0].Ports = append(s.Containers[0].Ports, corev1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: "TCP"})
		}, `spec.containers[0].ports[1].name: Duplicate value: "http"`},
		{"env name", func(s *corev1.PodSpec) { s.Containers[0].Env[0].Name = "A=B" },
			`spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`},
		{"duplicate volume", func(s *corev1.PodSpec) { s.Volumes = append(s.Volumes, s.Volumes[0]) },
			`spec.volumes[1].name: Duplicate value: "data"`},
		{"two volume sources", func(s *corev1.PodSpec) { s.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/tmp"} },
			"spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"},
		{"no volume source", func(s *corev1.PodSpec) { s.Volumes[0].EmptyDir = nil },
			"spec.volumes[0]: Required value: must specify a volume type"},
		{"mount of unknown volume", func(s *corev1.PodSpec) { s.Containers[0].VolumeMounts[0].Name = "other" },
			`spec.containers[0].volumeMounts[0].name: Not found: "other"`},
		{"secret volume name", func(s *corev1.PodSpec) {
			s.Volumes[0] = corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{DefaultMode: ptr.To[int32](0644)}}}
		}, "spec.volumes[0].secret.secretName: Required value"},
		{"restartPolicy", func(s *corev1.PodSpec) { s.RestartPolicy = "Sometimes" },
			`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
		{"dnsPolicy", func(s *corev1.PodSpec) { s.DNSPolicy = "Custom" },
			`spec.dnsPolicy: Unsupported value: "Custom": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`},
		{"requests above limits", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		}, `spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`},
		{"negative quantity", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("-1")
		}, `spec.containers[0].resources.limits[memory]: Invalid value: "-1": must be greater than or equal to 0`},
		{"unknown resource", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Limits["gpu"] = resource.MustParse("1")
		}, `spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified`},
		{"extended resource needs limit", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
		}, "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"},
		{"probe handler", func(s *corev1.PodSpec) { s.Containers[0].ReadinessProbe.TCPSocket = nil },
			"spec.containers[0].readinessProbe: Required value: must specify a handler type"},
		{"liveness successThreshold", func(s *corev1.PodSpec) {
			s.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 2, FailureThreshold: 3}
		}, "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"},
		{"nodeSelector", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"a b": "x"} },
			`spec.nodeSelector: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{"toleration seconds without NoExecute", func(s *corev1.PodSpec) { s.Tolerations[0].Effect = corev1.TaintEffectNoSchedule },
			`spec.tolerations[0].effect: Invalid value: "NoSchedule": effect must be 'NoExecute' when ` + "`tolerationSeconds`" + ` is set`},
		{"toleration without key", func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpEqual, Value: "x"}}
		},
			`spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when ` + "`key`" + ` is empty, which means "match all values and all keys"`},
		{"grace period required", func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = nil },
			"spec.terminationGracePeriodSeconds: Required value"},
		{"hostname", func(s *corev1.PodSpec) { s.Hostname = "a.b" },
			`spec.hostname: Invalid value: "a.b": must not contain dots`},
		{"activeDeadlineSeconds", func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](0) },
			"spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"},
		{"init container probe", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", ImagePullPolicy: "Always", TerminationMessagePolicy: "File",
				LivenessProbe: s.Containers[0].ReadinessProbe}}
		}, "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"},
		{"dnsConfig with None", func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSNone },
			"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"},
		{"hostPort conflict", func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: "TCP"}, {ContainerPort: 81, HostPort: 8080, Protocol: "TCP"}}
		}, `spec.containers[0].ports[1].hostPort: Duplicate value: "TCP//8080"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			tc.mutate(&s)
			got := errStrings(ValidatePodSpec(&s, nil, field.NewPath("spec")))
			for _, g := range got {
				if g == tc.want {
					return
				}
			}
			t.Errorf("missing error\n want: %s\n  got: %s", tc.want, strings.Join(got, "\n       "))
		})
	}
}

func TestValidatePodCreateOnly(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: validSpec()}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", ImagePullPolicy: "Always", TerminationMessagePolicy: "File"}}}
	got := errStrings(ValidatePodCreate(pod))
	if len(got) != 1 || got[0] != "spec.ephemeralContainers: Forbidden: cannot be set on create" {
		t.Errorf("got %q", got)
	}
	if errs := ValidatePod(pod); len(errs) != 0 {
		t.Errorf("ValidatePod with ephemeral containers: %v", errStrings(errs))
	}
}

func TestValidatePodHostNetwork(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: validSpec()}
	pod.Spec.HostNetwork = true
	// A template may leave hostPort unset under hostNetwork; a pod may not.
	if errs := ValidatePodSpec(&pod.Spec, nil, field.NewPath("spec")); len(errs) != 0 {
		t.Errorf("template: %v", errStrings(errs))
	}
	want := "spec.containers[0].ports[0].hostPort: Invalid value: 0: must match `containerPort` when `hostNetwork` is true"
	if got := errStrings(ValidatePod(pod)); len(got) != 1 || got[0] != want {
		t.Errorf("pod: got %q", got)
	}
}

func TestValidatePodTemplateSpec(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "-bad-"}}, Spec: validSpec()}
	tmpl.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", ImagePullPolicy: "Always", TerminationMessagePolicy: "File"}}}
	got := strings.Join(errStrings(ValidatePodTemplateSpec(tmpl, field.NewPath("spec", "template"))), "\n")
	for _, want := range []string{
		`spec.template.labels: Invalid value: "-bad-": a valid label must be an empty string or consist of alphanumeric characters`,
		"spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}
