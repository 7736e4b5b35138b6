package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestHPAServedAtV1AndV2: one HorizontalPodAutoscaler, stored once, is
// read and written at autoscaling/v1 and v2 as upstream converts it: v1's
// CPU target is a v2 Resource metric, what v1 cannot say travels in
// annotations and survives a v1 read-modify-write, and v1 objects are
// validated with the v2 rules.
func TestHPAServedAtV1AndV2(t *testing.T) {
	// No controllers: the autoscaler's status writes would race the
	// test's own.
	_, cfg := startServerWith(t, Options{InMemory: true, DefaultAdmission: true})
	cs := clientset(t, cfg)
	ctx := context.Background()
	v1 := cs.AutoscalingV1().HorizontalPodAutoscalers("default")
	v2 := cs.AutoscalingV2().HorizontalPodAutoscalers("default")
	target := autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}

	// kubectl autoscale --cpu-percent 50, at v1.
	if _, err := v1.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: target, MaxReplicas: 3, TargetCPUUtilizationPercentage: ptr.To(int32(50))}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := v2.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Spec.Metrics; len(m) != 1 || m[0].Resource == nil || m[0].Resource.Name != corev1.ResourceCPU ||
		m[0].Resource.Target.Type != autoscalingv2.UtilizationMetricType || *m[0].Resource.Target.AverageUtilization != 50 || *got.Spec.MinReplicas != 1 {
		t.Errorf("v1 HPA read at v2: %+v", got.Spec)
	}
	if len(got.Annotations) != 0 {
		t.Errorf("v2 form has annotations %v", got.Annotations)
	}

	// No CPU target: the conversion's 80%, in the answer to the create
	// (a dry run's too) as in later reads.
	plain := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: target, MaxReplicas: 2}}
	for _, dryRun := range [][]string{{metav1.DryRunAll}, nil} {
		created, err := v1.Create(ctx, plain, metav1.CreateOptions{DryRun: dryRun})
		if err != nil || created.Spec.TargetCPUUtilizationPercentage == nil || *created.Spec.TargetCPUUtilizationPercentage != 80 {
			t.Errorf("create (dry run %v) of a v1 HPA without a target: %+v, %v", dryRun, created, err)
		}
	}
	if plain, err := v1.Get(ctx, "plain", metav1.GetOptions{}); err != nil || plain.Spec.TargetCPUUtilizationPercentage == nil || *plain.Spec.TargetCPUUtilizationPercentage != 80 {
		t.Errorf("v1 HPA without a target: %+v, %v", plain, err)
	}

	// A v2 HPA with a Pods metric, a CPU target and a behavior.
	rich := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "rich", Annotations: map[string]string{"team": "a"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(target), MinReplicas: ptr.To(int32(2)), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "requests"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))}}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(60))}}},
			},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(30))}},
		}}
	if rich, err = v2.Create(ctx, rich, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rich.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 3,
		CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To(int32(70)), AverageValue: ptr.To(resource.MustParse("140m"))}}}},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale"}}}
	if _, err := v2.UpdateStatus(ctx, rich, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	old, err := v1.Get(ctx, "rich", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := old.Spec.TargetCPUUtilizationPercentage; p == nil || *p != 60 || old.Status.CurrentCPUUtilizationPercentage == nil || *old.Status.CurrentCPUUtilizationPercentage != 70 {
		t.Errorf("v1 form: spec %+v status %+v", old.Spec, old.Status)
	}
	var other []autoscalingv1.MetricSpec
	if err := json.Unmarshal([]byte(old.Annotations["autoscaling.alpha.kubernetes.io/metrics"]), &other); err != nil ||
		len(other) != 1 || other[0].Pods == nil || other[0].Pods.MetricName != "requests" {
		t.Errorf("v1 metrics annotation: %q (%v)", old.Annotations["autoscaling.alpha.kubernetes.io/metrics"], err)
	}
	for _, key := range []string{"autoscaling.alpha.kubernetes.io/behavior", "autoscaling.alpha.kubernetes.io/current-metrics", "autoscaling.alpha.kubernetes.io/conditions"} {
		if old.Annotations[key] == "" {
			t.Errorf("v1 form lacks annotation %s: %v", key, old.Annotations)
		}
	}
	if b := old.Annotations["autoscaling.alpha.kubernetes.io/behavior"]; !strings.Contains(b, `"ScaleDown":{"StabilizationWindowSeconds":30`) {
		t.Errorf("behavior annotation %s, want upstream's field names", b)
	}

	// A v1 read-modify-write keeps what only the annotations said, and
	// the status, even when a client drops the status annotations.
	old.Spec.MaxReplicas = 12
	delete(old.Annotations, "autoscaling.alpha.kubernetes.io/conditions")
	delete(old.Annotations, "autoscaling.alpha.kubernetes.io/current-metrics")
	if _, err := v1.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	after, err := v2.Get(ctx, "rich", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Spec.MaxReplicas != 12 || len(after.Spec.Metrics) != 2 || after.Spec.Metrics[0].Pods == nil || after.Spec.Behavior == nil ||
		*after.Spec.Behavior.ScaleDown.StabilizationWindowSeconds != 30 || len(after.Status.Conditions) != 1 || len(after.Status.CurrentMetrics) != 1 {
		t.Errorf("after a v1 update: spec %+v status %+v", after.Spec, after.Status)
	}
	if after.Generation != 2 {
		t.Errorf("generation after a v1 spec change: %d, want 2", after.Generation)
	}
	if len(after.Annotations) != 1 || after.Annotations["team"] != "a" {
		t.Errorf("v2 annotations after a v1 update: %v", after.Annotations)
	}

	// A v1 status write keeps the spec, and the annotations that carry it.
	old, _ = v1.Get(ctx, "rich", metav1.GetOptions{})
	old.Status.DesiredReplicas = 4
	delete(old.Annotations, "autoscaling.alpha.kubernetes.io/metrics")
	if _, err := v1.UpdateStatus(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if after, _ = v2.Get(ctx, "rich", metav1.GetOptions{}); after.Status.DesiredReplicas != 4 || len(after.Spec.Metrics) != 2 {
		t.Errorf("after a v1 status write: spec %+v status %+v", after.Spec, after.Status)
	}

	// v1 objects are checked with the v2 rules and paths.
	_, err = v1.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment"}, TargetCPUUtilizationPercentage: ptr.To(int32(0))}}, metav1.CreateOptions{})
	invalidWith(t, "v1 HPA without a max", err, "spec.maxReplicas: Required value: must be set and greater than 0")
	invalidWith(t, "v1 HPA without a target group", err, `spec.scaleTargetRef.apiVersion: Invalid value: "": apiVersion must specify API group`)
	invalidWith(t, "v1 HPA without a target name", err, "spec.scaleTargetRef.name: Required value")
	invalidWith(t, "v1 HPA with a 0% target", err, "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0")

	list, err := v1.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("v1 list: %v, %v", list, err)
	}

	// Tables at v1 are v2's.
	code, _, body := raw(t, cfg, "GET", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web", "", "application/json;as=Table;v=v1;g=meta.k8s.io", "")
	var table metav1.Table
	if code != 200 || json.Unmarshal([]byte(body), &table) != nil || len(table.ColumnDefinitions) != 7 || table.ColumnDefinitions[2].Name != "Targets" ||
		len(table.Rows) != 1 || table.Rows[0].Cells[1] != "Deployment/web" || table.Rows[0].Cells[2] != "cpu: <unknown>/50%" {
		t.Errorf("v1 table: %d %s", code, body)
	}
}
