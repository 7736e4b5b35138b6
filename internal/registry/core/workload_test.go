package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func newRC() *corev1.ReplicationController {
	return &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "default"},
		Spec: corev1.ReplicationControllerSpec{Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}},
		Status: corev1.ReplicationControllerStatus{Replicas: 3},
	}
}

func TestReplicationController(t *testing.T) {
	rc := newRC()
	expect(t, create(t, "replicationcontrollers", rc), "")
	if *rc.Spec.Replicas != 1 || rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || rc.Status.Replicas != 0 ||
		rc.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("rc defaults: %+v", rc)
	}

	rc = newRC()
	rc.Spec.Selector = map[string]string{"app": "other"}
	expect(t, create(t, "replicationcontrollers", rc), `spec.template.metadata.labels: Invalid value: {"app":"web"}: `+"`selector` does not match template `labels`")

	rc = newRC()
	rc.Spec.Replicas = ptr.To[int32](-1)
	expect(t, create(t, "replicationcontrollers", rc), "spec.replicas: Invalid value: -1: must be greater than or equal to 0")

	rc = newRC()
	rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	expect(t, create(t, "replicationcontrollers", rc), `spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`)

	rc = newRC()
	rc.Spec.Template.Labels = nil
	expect(t, create(t, "replicationcontrollers", rc), "spec.selector: Required value")

	vs := lookup(t, "replicationcontrollers").Strategy.ValidateStatusUpdate
	st := newRC()
	st.Status = corev1.ReplicationControllerStatus{Replicas: 1, ReadyReplicas: 2}
	expect(t, strs(vs(st, newRC())), "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas")
	if f := lookup(t, "replicationcontrollers").Strategy.SelectableFields(st); f["status.replicas"] != "1" {
		t.Errorf("fields %v", f)
	}
}

func TestEvent(t *testing.T) {
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "other", Name: "p"}, Reason: "Started", Type: "Normal",
		Source: corev1.EventSource{Component: "kubelet"}, ReportingController: "kubelet"}
	expect(t, create(t, "events", ev), `involvedObject.namespace: Invalid value: "other": does not match event.namespace`)
	ev.InvolvedObject.Namespace = "default"
	expect(t, create(t, "events", ev), "")
	f := lookup(t, "events").Strategy.SelectableFields(ev)
	if f["involvedObject.kind"] != "Pod" || f["involvedObject.name"] != "p" || f["reason"] != "Started" || f["source"] != "kubelet" ||
		f["type"] != "Normal" || f["reportingComponent"] != "kubelet" {
		t.Errorf("fields %v", f)
	}
	// Node events live in "default" with an empty involved namespace.
	ev.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "n1"}
	expect(t, create(t, "events", ev), "")

	// Newer events (with eventTime) need the reporting fields.
	ev.EventTime = metav1.NewMicroTime(metav1.Now().Time)
	ev.ReportingController = ""
	errs := create(t, "events", ev)
	expect(t, errs, "reportingController: Required value")
	expect(t, errs, "action: Required value")
}

func TestEndpoints(t *testing.T) {
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "10.244.0.5"}},
		Ports:     []corev1.EndpointPort{{Port: 80}},
	}}}
	expect(t, create(t, "endpoints", ep), "")
	if ep.Subsets[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("protocol not defaulted")
	}
	ep.Subsets[0].Addresses[0].IP = "127.0.0.1"
	ep.Subsets[0].Ports = append(ep.Subsets[0].Ports, corev1.EndpointPort{Port: 81, Protocol: "TCP"})
	errs := create(t, "endpoints", ep)
	expect(t, errs, `subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`)
	expect(t, errs, "subsets[0].ports[0].name: Required value")
	ep.Subsets[0].Addresses = nil
	expect(t, create(t, "endpoints", ep), "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`")
}

func TestLimitRangeAndQuota(t *testing.T) {
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer,
		Max:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Min:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
	}}}}
	expect(t, create(t, "limitranges", lr), "")
	it := lr.Spec.Limits[0]
	if it.Default.Cpu().String() != "2" || it.DefaultRequest.Cpu().String() != "2" {
		t.Errorf("limit range defaults: %+v", it)
	}
	lr.Spec.Limits[0].Min[corev1.ResourceCPU] = resource.MustParse("3")
	expect(t, create(t, "limitranges", lr), "spec.limits[0].min[cpu]: Invalid value: \"3\": min value 3 is greater than max value 2")

	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"}, Spec: corev1.ResourceQuotaSpec{
		Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), "widgets": resource.MustParse("1")}}}
	expect(t, create(t, "resourcequotas", q), `spec.hard[widgets]: Invalid value: "widgets": must be a standard resource type or fully qualified`)
	q.Spec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1.5")}
	expect(t, create(t, "resourcequotas", q), `spec.hard[pods]: Invalid value: "1500m": must be an integer`)
	q.Spec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}
	expect(t, create(t, "resourcequotas", q), "")
	n := q.DeepCopy()
	n.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
	expect(t, update(t, "resourcequotas", n, q), `spec.scopes: Invalid value: ["BestEffort"]: field is immutable`)
}
