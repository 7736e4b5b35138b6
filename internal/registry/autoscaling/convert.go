package autoscaling

import (
	"encoding/json"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

// The annotations an autoscaling/v1 HPA carries what its fields cannot
// say (upstream's names): the metrics other than a CPU utilization, the
// current metrics, the behavior and the conditions. They exist only in the
// v1 form: the stored (v2) object has fields for all of them.
const (
	metricSpecsAnnotation    = "autoscaling.alpha.kubernetes.io/metrics"
	metricStatusesAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	conditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	behaviorSpecsAnnotation  = "autoscaling.alpha.kubernetes.io/behavior"
	toleranceScaleDown       = "autoscaling.alpha.kubernetes.io/scale-down-tolerance"
	toleranceScaleUp         = "autoscaling.alpha.kubernetes.io/scale-up-tolerance"
)

var roundTripAnnotations = []string{
	metricSpecsAnnotation, metricStatusesAnnotation, conditionsAnnotation, behaviorSpecsAnnotation, toleranceScaleDown, toleranceScaleUp,
}

// dropRoundTripAnnotations returns annotations without the v1 round-trip
// ones (a copy when it removes any; nil when none are left of a map that
// had only those).
func dropRoundTripAnnotations(in map[string]string) map[string]string {
	found := false
	for _, k := range roundTripAnnotations {
		if _, ok := in[k]; ok {
			found = true
		}
	}
	if !found {
		return in
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	for _, k := range roundTripAnnotations {
		delete(out, k)
	}
	return out
}

func isCPUUtilization(m *autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
		m.Resource.Target.AverageUtilization != nil
}

// toV2 converts an autoscaling/v1 HPA to the autoscaling/v2 one it is
// stored as, as upstream's conversion to its internal version does:
// targetCPUUtilizationPercentage becomes a CPU Utilization metric after the
// metrics of the annotation, an HPA with no metric gets a CPU utilization
// of 80%, and the annotations carry behavior, current metrics and
// conditions.
func toV2(obj runtime.Object) runtime.Object {
	in := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	out := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   in.TypeMeta,
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    copyPtr(in.Spec.MinReplicas),
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: copyPtr(in.Status.ObservedGeneration),
			LastScaleTime:      in.Status.LastScaleTime.DeepCopy(),
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	out.SetGroupVersionKind(autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"))
	if p := in.Spec.TargetCPUUtilizationPercentage; p != nil {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(*p)}
	}
	if p := in.Status.CurrentCPUUtilizationPercentage; p != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{
			Type:     autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: copyPtr(p)}},
		}}
	}
	ann := in.Annotations
	if enc, ok := ann[metricSpecsAnnotation]; ok {
		var other []autoscalingv1.MetricSpec
		if json.Unmarshal([]byte(enc), &other) == nil {
			metrics := make([]autoscalingv2.MetricSpec, 0, len(other)+1)
			for i := range other {
				metrics = append(metrics, metricSpecToV2(&other[i]))
			}
			out.Spec.Metrics = append(metrics, out.Spec.Metrics...)
		}
	}
	if enc, ok := ann[behaviorSpecsAnnotation]; ok {
		var b behaviorAnnotation
		if json.Unmarshal([]byte(enc), &b) == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			out.Spec.Behavior = b.toV2()
		}
	}
	if enc, ok := ann[metricStatusesAnnotation]; ok {
		var current []autoscalingv1.MetricStatus
		if json.Unmarshal([]byte(enc), &current) == nil {
			out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, len(current))
			for i := range current {
				out.Status.CurrentMetrics[i] = metricStatusToV2(&current[i])
			}
		}
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(defaultCPUUtilization)}
	}
	if enc, ok := ann[conditionsAnnotation]; ok {
		var conds []autoscalingv1.HorizontalPodAutoscalerCondition
		if json.Unmarshal([]byte(enc), &conds) == nil {
			out.Status.Conditions = make([]autoscalingv2.HorizontalPodAutoscalerCondition, len(conds))
			for i, c := range conds {
				out.Status.Conditions[i] = autoscalingv2.HorizontalPodAutoscalerCondition{
					Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
					LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message, ObservedGeneration: copyPtr(c.ObservedGeneration),
				}
			}
		}
	}
	out.Annotations = dropRoundTripAnnotations(out.Annotations)
	return out
}

// toV1 converts a stored autoscaling/v2 HPA to its autoscaling/v1 form:
// the first CPU utilization metric is targetCPUUtilizationPercentage, the
// other metrics, the current metrics, the behavior and the conditions go
// to annotations.
func toV1(obj runtime.Object) runtime.Object {
	in := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	out := &autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   in.TypeMeta,
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    copyPtr(in.Spec.MinReplicas),
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{
			ObservedGeneration: copyPtr(in.Status.ObservedGeneration),
			LastScaleTime:      in.Status.LastScaleTime.DeepCopy(),
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	out.SetGroupVersionKind(autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"))
	out.Annotations = dropRoundTripAnnotations(out.Annotations)
	set := func(key string, v any) {
		enc, err := json.Marshal(v)
		if err != nil {
			return
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[key] = string(enc)
	}

	var other []autoscalingv1.MetricSpec
	for i := range in.Spec.Metrics {
		m := &in.Spec.Metrics[i]
		if isCPUUtilization(m) {
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				out.Spec.TargetCPUUtilizationPercentage = copyPtr(m.Resource.Target.AverageUtilization)
			}
			continue
		}
		other = append(other, metricSpecToV1(m))
	}
	current := make([]autoscalingv1.MetricStatus, len(in.Status.CurrentMetrics))
	for i := range in.Status.CurrentMetrics {
		m := &in.Status.CurrentMetrics[i]
		current[i] = metricStatusToV1(m)
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			out.Status.CurrentCPUUtilizationPercentage = copyPtr(m.Resource.Current.AverageUtilization)
		}
	}
	if len(other) > 0 {
		set(metricSpecsAnnotation, other)
	}
	if len(current) > 0 {
		set(metricStatusesAnnotation, current)
	}
	if in.Spec.Behavior != nil {
		set(behaviorSpecsAnnotation, behaviorFromV2(in.Spec.Behavior))
	}
	if len(in.Status.Conditions) > 0 {
		conds := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(in.Status.Conditions))
		for i, c := range in.Status.Conditions {
			conds[i] = autoscalingv1.HorizontalPodAutoscalerCondition{
				Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message, ObservedGeneration: copyPtr(c.ObservedGeneration),
			}
		}
		set(conditionsAnnotation, conds)
	}
	return out
}

func cpuUtilization(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(percent)},
		},
	}
}

func metricSpecToV2(in *autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		target := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, AverageValue: copyQuantity(s.AverageValue)}
		switch {
		case s.AverageValue == nil:
			target.Value = ptr(s.TargetValue.DeepCopy())
		case !s.TargetValue.IsZero():
			target.Type = autoscalingv2.AverageValueMetricType
			target.Value = ptr(s.TargetValue.DeepCopy())
		default:
			target.Type = autoscalingv2.AverageValueMetricType
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector.DeepCopy()},
			Target:          target,
		}
	}
	if s := in.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector.DeepCopy()},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(s.TargetAverageValue.DeepCopy())},
		}
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: s.Name, Target: resourceTarget(s.TargetAverageUtilization, s.TargetAverageValue)}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{
			Name: s.Name, Container: s.Container, Target: resourceTarget(s.TargetAverageUtilization, s.TargetAverageValue),
		}
	}
	if s := in.External; s != nil {
		target := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: copyQuantity(s.TargetValue), AverageValue: copyQuantity(s.TargetAverageValue)}
		if s.TargetValue == nil {
			target.Type = autoscalingv2.AverageValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector.DeepCopy()},
			Target: target,
		}
	}
	return out
}

func resourceTarget(utilization *int32, averageValue *resource.Quantity) autoscalingv2.MetricTarget {
	t := autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: copyPtr(utilization), AverageValue: copyQuantity(averageValue)}
	if utilization == nil {
		t.Type = autoscalingv2.AverageValueMetricType
	}
	return t
}

func metricSpecToV1(in *autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		out.Object = &autoscalingv1.ObjectMetricSource{
			Target:     autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName: s.Metric.Name, Selector: s.Metric.Selector.DeepCopy(),
			AverageValue: copyQuantity(s.Target.AverageValue),
		}
		if s.Target.Value != nil {
			out.Object.TargetValue = s.Target.Value.DeepCopy()
		}
	}
	if s := in.Pods; s != nil {
		out.Pods = &autoscalingv1.PodsMetricSource{MetricName: s.Metric.Name, Selector: s.Metric.Selector.DeepCopy()}
		if s.Target.AverageValue != nil {
			out.Pods.TargetAverageValue = s.Target.AverageValue.DeepCopy()
		}
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{
			Name: s.Name, TargetAverageUtilization: copyPtr(s.Target.AverageUtilization), TargetAverageValue: copyQuantity(s.Target.AverageValue),
		}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{
			Name: s.Name, Container: s.Container,
			TargetAverageUtilization: copyPtr(s.Target.AverageUtilization), TargetAverageValue: copyQuantity(s.Target.AverageValue),
		}
	}
	if s := in.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricSource{
			MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector.DeepCopy(),
			TargetValue: copyQuantity(s.Target.Value), TargetAverageValue: copyQuantity(s.Target.AverageValue),
		}
	}
	return out
}

func metricStatusToV2(in *autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		out.Object = &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector.DeepCopy()},
			Current:         autoscalingv2.MetricValueStatus{Value: ptr(s.CurrentValue.DeepCopy()), AverageValue: copyQuantity(s.AverageValue)},
		}
	}
	if s := in.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector.DeepCopy()},
			Current: autoscalingv2.MetricValueStatus{AverageValue: ptr(s.CurrentAverageValue.DeepCopy())},
		}
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: s.Name, Current: autoscalingv2.MetricValueStatus{
			AverageValue: ptr(s.CurrentAverageValue.DeepCopy()), AverageUtilization: copyPtr(s.CurrentAverageUtilization),
		}}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, Current: autoscalingv2.MetricValueStatus{
			AverageValue: ptr(s.CurrentAverageValue.DeepCopy()), AverageUtilization: copyPtr(s.CurrentAverageUtilization),
		}}
	}
	if s := in.External; s != nil {
		out.External = &autoscalingv2.ExternalMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector.DeepCopy()},
			Current: autoscalingv2.MetricValueStatus{Value: ptr(s.CurrentValue.DeepCopy()), AverageValue: copyQuantity(s.CurrentAverageValue)},
		}
	}
	return out
}

func metricStatusToV1(in *autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		out.Object = &autoscalingv1.ObjectMetricStatus{
			Target:     autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName: s.Metric.Name, Selector: s.Metric.Selector.DeepCopy(), AverageValue: copyQuantity(s.Current.AverageValue),
		}
		if s.Current.Value != nil {
			out.Object.CurrentValue = s.Current.Value.DeepCopy()
		}
	}
	if s := in.Pods; s != nil {
		out.Pods = &autoscalingv1.PodsMetricStatus{MetricName: s.Metric.Name, Selector: s.Metric.Selector.DeepCopy()}
		if s.Current.AverageValue != nil {
			out.Pods.CurrentAverageValue = s.Current.AverageValue.DeepCopy()
		}
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricStatus{Name: s.Name, CurrentAverageUtilization: copyPtr(s.Current.AverageUtilization)}
		if s.Current.AverageValue != nil {
			out.Resource.CurrentAverageValue = s.Current.AverageValue.DeepCopy()
		}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, CurrentAverageUtilization: copyPtr(s.Current.AverageUtilization)}
		if s.Current.AverageValue != nil {
			out.ContainerResource.CurrentAverageValue = s.Current.AverageValue.DeepCopy()
		}
	}
	if s := in.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricStatus{
			MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector.DeepCopy(), CurrentAverageValue: copyQuantity(s.Current.AverageValue),
		}
		if s.Current.Value != nil {
			out.External.CurrentValue = s.Current.Value.DeepCopy()
		}
	}
	return out
}

// behaviorAnnotation is the behavior annotation's form: upstream writes
// its internal type, which has no JSON tags, so the keys are the Go field
// names (reading is case-insensitive, so v2-style keys are read too).
type behaviorAnnotation struct {
	ScaleUp   *scalingRulesAnnotation
	ScaleDown *scalingRulesAnnotation
}

type scalingRulesAnnotation struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *autoscalingv2.ScalingPolicySelect
	Policies                   []scalingPolicyAnnotation
	Tolerance                  *resource.Quantity
}

type scalingPolicyAnnotation struct {
	Type          autoscalingv2.HPAScalingPolicyType
	Value         int32
	PeriodSeconds int32
}

func behaviorFromV2(b *autoscalingv2.HorizontalPodAutoscalerBehavior) behaviorAnnotation {
	rules := func(r *autoscalingv2.HPAScalingRules) *scalingRulesAnnotation {
		if r == nil {
			return nil
		}
		out := &scalingRulesAnnotation{StabilizationWindowSeconds: copyPtr(r.StabilizationWindowSeconds), SelectPolicy: copyPtr(r.SelectPolicy),
			Tolerance: copyQuantity(r.Tolerance)}
		if r.Policies != nil {
			out.Policies = make([]scalingPolicyAnnotation, len(r.Policies))
			for i, p := range r.Policies {
				out.Policies[i] = scalingPolicyAnnotation(p)
			}
		}
		return out
	}
	return behaviorAnnotation{ScaleUp: rules(b.ScaleUp), ScaleDown: rules(b.ScaleDown)}
}

func (b behaviorAnnotation) toV2() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	rules := func(r *scalingRulesAnnotation) *autoscalingv2.HPAScalingRules {
		if r == nil {
			return nil
		}
		out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
		if r.Policies != nil {
			out.Policies = make([]autoscalingv2.HPAScalingPolicy, len(r.Policies))
			for i, p := range r.Policies {
				out.Policies[i] = autoscalingv2.HPAScalingPolicy(p)
			}
		}
		return out
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(b.ScaleUp), ScaleDown: rules(b.ScaleDown)}
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func copyQuantity(q *resource.Quantity) *resource.Quantity {
	if q == nil {
		return nil
	}
	c := q.DeepCopy()
	return &c
}
