package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "nginx", Image: "nginx",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9"},
	}
}

func TestPodCreate(t *testing.T) {
	pod := newPod()
	pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}}
	expect(t, create(t, "pods", pod), "")
	if pod.Status.Phase != corev1.PodPending || pod.Status.PodIP != "" {
		t.Errorf("status not reset: %+v", pod.Status)
	}
	// Requests are defaulted from limits, so the pod is Guaranteed.
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("qosClass = %s", pod.Status.QOSClass)
	}
	if len(pod.Status.Conditions) != 1 || pod.Status.Conditions[0].Reason != "SchedulingGated" {
		t.Errorf("conditions = %+v", pod.Status.Conditions)
	}
	if pod.Spec.EnableServiceLinks == nil || pod.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("spec not defaulted: %+v", pod.Spec)
	}
	if f := lookup(t, "pods").Strategy.SelectableFields(pod); f["status.phase"] != "Pending" || f["spec.hostNetwork"] != "false" ||
		f["spec.restartPolicy"] != "Always" || f["spec.schedulerName"] != "default-scheduler" {
		t.Errorf("fields = %v", f)
	}
}

func TestPodCreateOnlyRules(t *testing.T) {
	ec := []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	pod := newPod()
	pod.Spec.EphemeralContainers = ec
	expect(t, create(t, "pods", pod), "spec.ephemeralContainers: Forbidden: cannot be set on create")

	// The same spec is fine on an update (ephemeral containers were added
	// through the subresource), e.g. a label change.
	old := newPod()
	create(t, "pods", old)
	old.Spec.EphemeralContainers = ec
	old.Spec.EphemeralContainers[0].ImagePullPolicy = corev1.PullAlways
	old.Spec.EphemeralContainers[0].TerminationMessagePolicy = corev1.TerminationMessageReadFile
	old.Spec.EphemeralContainers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
	n := old.DeepCopy()
	n.Labels["tier"] = "front"
	expect(t, update(t, "pods", n, old), "")
}

func TestPodUpdate(t *testing.T) {
	old := newPod()
	expect(t, create(t, "pods", old), "")

	n := old.DeepCopy()
	n.Spec.Containers[0].Image = "nginx:1.28"
	expect(t, update(t, "pods", n, old), "")

	n = old.DeepCopy()
	n.Spec.RestartPolicy = corev1.RestartPolicyNever
	expect(t, update(t, "pods", n, old), "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,…")

	n = old.DeepCopy()
	n.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
	expect(t, update(t, "pods", n, old), `metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation`)
}

func TestPodStatusUpdate(t *testing.T) {
	old := newPod()
	create(t, "pods", old)
	vs := lookup(t, "pods").Strategy.ValidateStatusUpdate

	n := old.DeepCopy()
	n.Status.QOSClass = ""
	expect(t, strs(vs(n, old)), "")
	if n.Status.QOSClass != old.Status.QOSClass {
		t.Errorf("empty qosClass not backfilled")
	}

	n = old.DeepCopy()
	n.Status.QOSClass = corev1.PodQOSBestEffort
	expect(t, strs(vs(n, old)), `status.qosClass: Invalid value: "BestEffort": field is immutable`)

	n = old.DeepCopy()
	n.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}
	expect(t, strs(vs(n, old)), `status.podIPs: Invalid value: [{"ip":"10.0.0.1"},{"ip":"10.0.0.2"}]: may specify no more than one IP for each IP family`)

	never := old.DeepCopy()
	never.Spec.RestartPolicy = corev1.RestartPolicyNever
	never.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "nginx", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}
	n = never.DeepCopy()
	n.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	expect(t, strs(vs(n, never)), "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state")

	n = old.DeepCopy()
	n.Status.Conditions = []corev1.PodCondition{{Type: "bad type", Status: "True"}}
	expect(t, strs(vs(n, old)), `metadata.conditions[0].Type: Invalid value: "bad type": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`)
}

func TestPodDefaultSyncsIPs(t *testing.T) {
	pod := newPod()
	lookup(t, "pods").Strategy.Default(pod)
	if len(pod.Status.PodIPs) != 1 || pod.Status.PodIPs[0].IP != "10.0.0.9" {
		t.Errorf("podIPs = %v", pod.Status.PodIPs)
	}
}

func TestPodTemplate(t *testing.T) {
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "default"},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}
	expect(t, create(t, "podtemplates", pt), "")
	if pt.Template.Spec.EnableServiceLinks != nil || pt.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("template defaults: %+v", pt.Template.Spec)
	}
	pt.Template.Spec.Containers = nil
	expect(t, create(t, "podtemplates", pt), "template.spec.containers: Required value")
}
