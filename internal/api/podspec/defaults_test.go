package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestDefaultPodSpec(t *testing.T) {
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:  "app",
			Image: "nginx",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Env: []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("0.0001")}},
		}},
		Volumes: []corev1.Volume{
			{Name: "empty"},
			{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			{Name: "hp", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
			{Name: "dapi", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		},
	}
	DefaultPodSpec(&spec)

	check := func(name string, got, want any) {
		t.Helper()
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", name, got, want)
		}
	}
	check("restartPolicy", spec.RestartPolicy, corev1.RestartPolicyAlways)
	check("dnsPolicy", spec.DNSPolicy, corev1.DNSClusterFirst)
	check("terminationGracePeriodSeconds", spec.TerminationGracePeriodSeconds, ptr.To[int64](30))
	check("schedulerName", spec.SchedulerName, "default-scheduler")
	check("securityContext", spec.SecurityContext, &corev1.PodSecurityContext{})
	check("enableServiceLinks (not on templates)", spec.EnableServiceLinks, (*bool)(nil))

	c := spec.Containers[0]
	check("imagePullPolicy", c.ImagePullPolicy, corev1.PullAlways)
	check("terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log")
	check("terminationMessagePolicy", c.TerminationMessagePolicy, corev1.TerminationMessageReadFile)
	check("port protocol", c.Ports[0].Protocol, corev1.ProtocolTCP)
	check("fieldRef apiVersion", c.Env[0].ValueFrom.FieldRef.APIVersion, "v1")
	check("liveness", *c.LivenessProbe, corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
	})
	check("grpc service", c.ReadinessProbe.GRPC.Service, ptr.To(""))
	check("limit rounded up", c.Resources.Limits.Cpu().String(), "1m")
	check("requests (not on templates)", c.Resources.Requests, corev1.ResourceList(nil))

	v := spec.Volumes
	check("empty volume", v[0].VolumeSource, corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})
	check("secret mode", v[1].Secret.DefaultMode, ptr.To[int32](0644))
	check("configMap mode", v[2].ConfigMap.DefaultMode, ptr.To[int32](0644))
	check("hostPath type", v[3].HostPath.Type, ptr.To(corev1.HostPathUnset))
	check("projected mode", v[4].Projected.DefaultMode, ptr.To[int32](0644))
	check("token expiration", v[4].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds, ptr.To[int64](3600))
	check("downwardAPI mode", v[5].DownwardAPI.DefaultMode, ptr.To[int32](0644))
	check("downwardAPI fieldRef", v[5].DownwardAPI.Items[0].FieldRef.APIVersion, "v1")
}

func TestDefaultPod(t *testing.T) {
	pod := corev1.Pod{Spec: corev1.PodSpec{
		HostNetwork: true,
		Containers: []corev1.Container{{
			Name: "app", Image: "nginx:1.27",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			},
		}},
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
	}}
	DefaultPod(&pod)
	c := pod.Spec.Containers[0]
	if got := c.Resources.Requests.Cpu().String(); got != "500m" {
		t.Errorf("explicit cpu request changed to %s", got)
	}
	if got := c.Resources.Requests.Memory().String(); got != "1Gi" {
		t.Errorf("memory request = %s, want 1Gi (from limit)", got)
	}
	if got := pod.Spec.InitContainers[0].Resources.Requests.Memory().String(); got != "64Mi" {
		t.Errorf("init memory request = %s, want 64Mi", got)
	}
	if pod.Spec.EnableServiceLinks == nil || !*pod.Spec.EnableServiceLinks {
		t.Errorf("enableServiceLinks = %v, want true", pod.Spec.EnableServiceLinks)
	}
	if got := c.Ports[0].HostPort; got != 8080 {
		t.Errorf("hostPort = %d, want 8080 under hostNetwork", got)
	}
	if c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("imagePullPolicy = %s, want IfNotPresent", c.ImagePullPolicy)
	}
}

func TestImagePullPolicyDefault(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"nginx":                      corev1.PullAlways,
		"nginx:latest":               corev1.PullAlways,
		"docker.io/library/nginx":    corev1.PullAlways,
		"localhost:5000/app":         corev1.PullAlways,
		"localhost:5000/app:v1":      corev1.PullIfNotPresent,
		"nginx:1.27":                 corev1.PullIfNotPresent,
		"nginx@sha256:" + sha:        corev1.PullIfNotPresent,
		"nginx:latest@sha256:" + sha: corev1.PullAlways,
		"Nginx":                      corev1.PullIfNotPresent, // unparsable: uppercase repository
		"":                           corev1.PullIfNotPresent,
	} {
		c := corev1.Container{Image: image}
		defaultContainer(&c)
		if c.ImagePullPolicy != want {
			t.Errorf("image %q: imagePullPolicy = %s, want %s", image, c.ImagePullPolicy, want)
		}
	}
}

const sha = "0000000000000000000000000000000000000000000000000000000000000000"
