package autoscaling

import (
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

// richHPA uses every metric source, a behavior, current metrics and
// conditions: everything the v1 form carries in annotations.
func richHPA() *autoscalingv2.HorizontalPodAutoscaler {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"q": "a"}}
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{"team": "a"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr(int32(2)), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
					DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
					Metric:          autoscalingv2.MetricIdentifier{Name: "rps", Selector: sel},
					Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q("100")}}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("5")}}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("1Gi")}}},
				{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceCPU,
					Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(70))}}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "lag", Selector: sel},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("30")}}},
				cpuUtilization(60),
			},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: defaultScaleUp(),
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(30)), Tolerance: q("50m"),
					Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}},
			},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: ptr(int64(3)), CurrentReplicas: 2, DesiredReplicas: 3,
			CurrentMetrics: []autoscalingv2.MetricStatus{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
					Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(75)), AverageValue: q("150m")}}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
					Current: autoscalingv2.MetricValueStatus{AverageValue: q("4")}}},
			},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound"}},
		},
	}
}

// TestV2ToV1AndBack: a v2 HPA read at v1 and written back unchanged is the
// same v2 HPA, as upstream's round trip through annotations keeps it.
func TestV2ToV1AndBack(t *testing.T) {
	in := richHPA()
	v1 := toV1(in.DeepCopy()).(*autoscalingv1.HorizontalPodAutoscaler)
	if v1.APIVersion != "autoscaling/v1" || *v1.Spec.TargetCPUUtilizationPercentage != 60 || *v1.Status.CurrentCPUUtilizationPercentage != 75 {
		t.Fatalf("v1 form: %+v", v1)
	}
	for _, k := range roundTripAnnotations[:4] {
		if v1.Annotations[k] == "" {
			t.Errorf("v1 form lacks %s", k)
		}
	}
	back := toV2(v1).(*autoscalingv2.HorizontalPodAutoscaler)
	want := in.DeepCopy()
	// The CPU utilization target comes back after the other metrics (it
	// was last already), as upstream orders them.
	if !equality.Semantic.DeepEqual(back.Spec, want.Spec) {
		t.Errorf("spec after the round trip:\n got %+v\nwant %+v", back.Spec, want.Spec)
	}
	if !equality.Semantic.DeepEqual(back.Status, want.Status) {
		t.Errorf("status after the round trip:\n got %+v\nwant %+v", back.Status, want.Status)
	}
	if len(back.Annotations) != 1 || back.Annotations["team"] != "a" {
		t.Errorf("annotations after the round trip: %v", back.Annotations)
	}
}

// TestV1ToV2: the fields of v1 and upstream's pseudo-default.
func TestV1ToV2(t *testing.T) {
	v1 := &autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3, MinReplicas: ptr(int32(1))},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{CurrentCPUUtilizationPercentage: ptr(int32(20))}}
	v2 := toV2(v1).(*autoscalingv2.HorizontalPodAutoscaler)
	if len(v2.Spec.Metrics) != 1 || !isCPUUtilization(&v2.Spec.Metrics[0]) || *v2.Spec.Metrics[0].Resource.Target.AverageUtilization != defaultCPUUtilization {
		t.Errorf("no target: metrics %+v, want CPU at %d%%", v2.Spec.Metrics, defaultCPUUtilization)
	}
	if c := v2.Status.CurrentMetrics; len(c) != 1 || *c[0].Resource.Current.AverageUtilization != 20 {
		t.Errorf("current CPU: %+v", c)
	}
	// Annotations that do not parse are left out, as upstream does.
	v1.Annotations = map[string]string{metricSpecsAnnotation: "{", conditionsAnnotation: "[]", "x": "y"}
	v2 = toV2(v1).(*autoscalingv2.HorizontalPodAutoscaler)
	if len(v2.Spec.Metrics) != 1 || len(v2.Status.Conditions) != 0 || len(v2.Annotations) != 1 {
		t.Errorf("bad annotations: %+v %v", v2.Spec.Metrics, v2.Annotations)
	}
	// A v1 Object metric with only an average value.
	m := metricSpecToV2(&autoscalingv1.MetricSpec{Type: autoscalingv1.ObjectMetricSourceType, Object: &autoscalingv1.ObjectMetricSource{MetricName: "m", AverageValue: q("3")}})
	if m.Object.Target.Type != autoscalingv2.AverageValueMetricType || m.Object.Target.Value != nil || m.Object.Target.AverageValue.String() != "3" {
		t.Errorf("object metric with an average value: %+v", m.Object.Target)
	}
}

// TestValidationOptions: upstream v1.37's scale target and replica rules,
// at v2 and through v1.
func TestValidationOptions(t *testing.T) {
	v2, v1 := horizontalPodAutoscalers(), horizontalPodAutoscalersV1()
	h := richHPA()
	h.Spec.ScaleTargetRef.APIVersion = "v1"
	h.Spec.MinReplicas = ptr(int32(0)) // an Object metric: scaling to zero is allowed
	errs := v2.Strategy.Validate(h)
	if len(errs) != 1 || errs[0].Error() != `spec.scaleTargetRef.apiVersion: Invalid value: "v1": apiVersion must specify API group` {
		t.Errorf("a Deployment in the core group: %v", errs)
	}
	// An update that keeps the apiVersion and kind may keep it.
	if errs := v2.Strategy.ValidateUpdate(h, h.DeepCopy()); len(errs) != 0 {
		t.Errorf("an update keeping the apiVersion: %v", errs)
	}
	h.Spec.ScaleTargetRef.Kind = "ReplicationController"
	if errs := v2.Strategy.Validate(h); len(errs) != 0 {
		t.Errorf("a ReplicationController in the core group: %v", errs)
	}
	h.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(50)}
	if errs := v2.Strategy.Validate(h); len(errs) != 1 || errs[0].Field != "spec.metrics" {
		t.Errorf("scaling to zero on CPU: %v", errs)
	}

	bad := &autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: -1, MinReplicas: ptr(int32(-1)),
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
	var got []string
	for _, e := range v1.Strategy.Validate(bad) {
		got = append(got, e.Error())
	}
	want := []string{"spec.minReplicas: Invalid value: -1: must be greater than or equal to 0",
		"spec.maxReplicas: Invalid value: -1: must be greater than or equal to 1"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("v1 errors:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
