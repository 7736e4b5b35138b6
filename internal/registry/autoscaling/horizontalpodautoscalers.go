package autoscaling

import (
	"context"
	"errors"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

const (
	// defaultCPUUtilization is the target of the metric an HPA gets when it
	// names none.
	defaultCPUUtilization = 80
	maxPeriodSeconds      = 1800
	maxStabilizationSecs  = 3600
	// minReplicasLowerBound is 0: upstream v1.37's HPAScaleToZero is on
	// (and an HPA at 0 needs an Object or External metric).
	minReplicasLowerBound = 0
)

func horizontalPodAutoscalers() registry.Resource {
	return registry.Resource{
		Kind:             autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"),
		Plural:           "horizontalpodautoscalers",
		Singular:         "horizontalpodautoscaler",
		ShortNames:       []string{"hpa"},
		Categories:       []string{"all"},
		Namespaced:       true,
		Subresources:     []string{"status"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultHPA(obj.(*autoscalingv2.HorizontalPodAutoscaler)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*autoscalingv2.HorizontalPodAutoscaler).Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateHPASpec(&obj.(*autoscalingv2.HorizontalPodAutoscaler).Spec, field.NewPath("spec"), validationOptions(obj.(*autoscalingv2.HorizontalPodAutoscaler), nil))
			},
			// An update may keep an apiVersion that a create could not have.
			ValidateUpdateOnly: true,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				h := obj.(*autoscalingv2.HorizontalPodAutoscaler)
				return validateHPASpec(&h.Spec, field.NewPath("spec"), validationOptions(h, old.(*autoscalingv2.HorizontalPodAutoscaler)))
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				s := &obj.(*autoscalingv2.HorizontalPodAutoscaler).Status
				errs := apivalidation.ValidateNonnegativeField(int64(s.CurrentReplicas), field.NewPath("status", "currentReplicas"))
				return append(errs, apivalidation.ValidateNonnegativeField(int64(s.DesiredReplicas), field.NewPath("status", "desiredReplicas"))...)
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// defaultHPA applies upstream's autoscaling/v2 defaults.
func defaultHPA(h *autoscalingv2.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		h.Spec.MinReplicas = ptr(int32(1))
	}
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{
					Type:               autoscalingv2.UtilizationMetricType,
					AverageUtilization: ptr(int32(defaultCPUUtilization)),
				},
			},
		}}
	}
	// A behavior that is given at all is filled in completely.
	if b := h.Spec.Behavior; b != nil {
		b.ScaleUp = fillScalingRules(b.ScaleUp, defaultScaleUp())
		b.ScaleDown = fillScalingRules(b.ScaleDown, defaultScaleDown())
	}
}

func defaultScaleUp() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr(int32(0)),
		SelectPolicy:               ptr(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// defaultScaleDown leaves the stabilization window unset: upstream's
// default for it is a flag of the controller manager.
func defaultScaleDown() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: ptr(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

func fillScalingRules(given, def *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if given == nil {
		return def
	}
	if given.SelectPolicy != nil {
		def.SelectPolicy = given.SelectPolicy
	}
	if given.StabilizationWindowSeconds != nil {
		def.StabilizationWindowSeconds = given.StabilizationWindowSeconds
	}
	if given.Policies != nil {
		def.Policies = given.Policies
	}
	if given.Tolerance != nil {
		def.Tolerance = given.Tolerance
	}
	return def
}

// refOptions say what apiVersion a reference may have.
type refOptions struct {
	// allowInvalidAPIVersion: any (an update that keeps it).
	allowInvalidAPIVersion bool
	// allowEmptyGroup: one of the core group ("v1").
	allowEmptyGroup bool
}

// hpaOptions are the rules that depend on the object and the stored one.
type hpaOptions struct {
	scaleTargetRef refOptions
	objectMetrics  refOptions
}

// validationOptions are upstream v1.37's: a scale target names its API
// group (a ReplicationController need not), unless an update keeps its
// apiVersion and kind; an Object metric's object may be of the core group,
// and an update of an HPA whose Object metrics were already invalid may
// keep them.
func validationOptions(h, old *autoscalingv2.HorizontalPodAutoscaler) hpaOptions {
	opts := hpaOptions{objectMetrics: refOptions{allowEmptyGroup: true}}
	ref := h.Spec.ScaleTargetRef
	switch {
	case old != nil && old.Spec.ScaleTargetRef.APIVersion == ref.APIVersion && old.Spec.ScaleTargetRef.Kind == ref.Kind:
		opts.scaleTargetRef.allowInvalidAPIVersion = true
	case ref.Kind == "ReplicationController":
		opts.scaleTargetRef.allowEmptyGroup = true
	}
	if old != nil {
		for _, m := range old.Spec.Metrics {
			if m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil && validateAPIVersion(m.Object.DescribedObject, opts.objectMetrics) != nil {
				opts.objectMetrics.allowInvalidAPIVersion = true
				break
			}
		}
	}
	return opts
}

func validateAPIVersion(ref autoscalingv2.CrossVersionObjectReference, opts refOptions) error {
	if opts.allowInvalidAPIVersion {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return err
	}
	if !opts.allowEmptyGroup && gv.Group == "" {
		return errors.New("apiVersion must specify API group")
	}
	return nil
}

func validateHPASpec(s *autoscalingv2.HorizontalPodAutoscalerSpec, p *field.Path, opts hpaOptions) field.ErrorList {
	var errs field.ErrorList
	if s.MinReplicas != nil && *s.MinReplicas < minReplicasLowerBound {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *s.MinReplicas, fmt.Sprintf("must be greater than or equal to %d", minReplicasLowerBound)))
	}
	switch {
	case s.MaxReplicas == 0:
		errs = append(errs, field.Required(p.Child("maxReplicas"), "must be set and greater than 0"))
	case s.MaxReplicas < 0:
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to 1"))
	}
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateObjectReference(s.ScaleTargetRef, p.Child("scaleTargetRef"), opts.scaleTargetRef)...)

	mp := p.Child("metrics")
	hasObjectOrExternal := false
	for i := range s.Metrics {
		errs = append(errs, validateMetricSpec(&s.Metrics[i], mp.Index(i), opts.objectMetrics)...)
		if t := s.Metrics[i].Type; t == autoscalingv2.ObjectMetricSourceType || t == autoscalingv2.ExternalMetricSourceType {
			hasObjectOrExternal = true
		}
	}
	if s.MinReplicas != nil && *s.MinReplicas == 0 && !hasObjectOrExternal {
		errs = append(errs, field.Forbidden(mp, "must specify at least one Object or External metric to support scaling to zero replicas"))
	}
	if b := s.Behavior; b != nil {
		bp := p.Child("behavior")
		errs = append(errs, validateScalingRules(b.ScaleUp, bp.Child("scaleUp"))...)
		errs = append(errs, validateScalingRules(b.ScaleDown, bp.Child("scaleDown"))...)
	}
	return errs
}

func validateObjectReference(ref autoscalingv2.CrossVersionObjectReference, p *field.Path, opts refOptions) field.ErrorList {
	var errs field.ErrorList
	if ref.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(ref.Kind) {
			errs = append(errs, field.Invalid(p.Child("kind"), ref.Kind, msg))
		}
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	if err := validateAPIVersion(ref, opts); err != nil {
		errs = append(errs, field.Invalid(p.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	return errs
}

var scalingSelectPolicies = []string{
	string(autoscalingv2.DisabledPolicySelect), string(autoscalingv2.MaxChangePolicySelect), string(autoscalingv2.MinChangePolicySelect),
}

func validateScalingRules(r *autoscalingv2.HPAScalingRules, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil {
		if *w < 0 {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), w, "must be greater than or equal to zero"))
		}
		if *w > maxStabilizationSecs {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), w, fmt.Sprintf("must be less than or equal to %v", maxStabilizationSecs)))
		}
	}
	if r.SelectPolicy != nil && !has(scalingSelectPolicies, string(*r.SelectPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("selectPolicy"), r.SelectPolicy, scalingSelectPolicies))
	}
	if r.Tolerance != nil && r.Tolerance.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("tolerance"), r.Tolerance, "must be greater than or equal to zero"))
	}
	pp := p.Child("policies")
	if len(r.Policies) == 0 {
		errs = append(errs, field.Required(pp, "must specify at least one Policy"))
	}
	for i, pol := range r.Policies {
		ip := pp.Index(i)
		if pol.Type != autoscalingv2.PodsScalingPolicy && pol.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(ip.Child("type"), pol.Type, []string{string(autoscalingv2.PercentScalingPolicy), string(autoscalingv2.PodsScalingPolicy)}))
		}
		if pol.Value <= 0 {
			errs = append(errs, field.Invalid(ip.Child("value"), pol.Value, "must be greater than zero"))
		}
		if pol.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), pol.PeriodSeconds, "must be greater than zero"))
		}
		if pol.PeriodSeconds > maxPeriodSeconds {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), pol.PeriodSeconds, fmt.Sprintf("must be less than or equal to %v", maxPeriodSeconds)))
		}
	}
	return errs
}

func has(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

var metricSourceTypes = []string{
	string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
	string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType),
	string(autoscalingv2.ResourceMetricSourceType),
}

func validateMetricSpec(m *autoscalingv2.MetricSpec, p *field.Path, objectRefs refOptions) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric source type"))
	}
	if !has(metricSourceTypes, string(m.Type)) {
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, metricSourceTypes))
	}

	// Which sources are set; only the first one found is validated.
	var present []string
	add := func(name string, validate func() field.ErrorList) {
		present = append(present, name)
		if len(present) == 1 {
			errs = append(errs, validate()...)
		}
	}
	if m.Object != nil {
		add("object", func() field.ErrorList { return validateObjectSource(m.Object, p.Child("object"), objectRefs) })
	}
	if m.External != nil {
		add("external", func() field.ErrorList { return validateExternalSource(m.External, p.Child("external")) })
	}
	if m.Pods != nil {
		add("pods", func() field.ErrorList { return validatePodsSource(m.Pods, p.Child("pods")) })
	}
	if m.Resource != nil {
		add("resource", func() field.ErrorList { return validateResourceSource(m.Resource, p.Child("resource")) })
	}
	if m.ContainerResource != nil {
		add("containerResource", func() field.ErrorList {
			return validateContainerResourceSource(m.ContainerResource, p.Child("containerResource"))
		})
	}

	var expected string
	missing := false
	switch m.Type {
	case autoscalingv2.ObjectMetricSourceType:
		expected, missing = "object", m.Object == nil
	case autoscalingv2.PodsMetricSourceType:
		expected, missing = "pods", m.Pods == nil
	case autoscalingv2.ResourceMetricSourceType:
		expected, missing = "resource", m.Resource == nil
	case autoscalingv2.ExternalMetricSourceType:
		expected, missing = "external", m.External == nil
	case autoscalingv2.ContainerResourceMetricSourceType:
		expected, missing = "containerResource", m.ContainerResource == nil
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, metricSourceTypes))
	}
	if missing {
		errs = append(errs, field.Required(p.Child(expected), "must populate information for the given metric source"))
	}
	if len(present) != 1 {
		for _, name := range present {
			if name != expected {
				errs = append(errs, field.Forbidden(p.Child(name), "must populate the given metric source only"))
			}
		}
	}
	return errs
}

func validateObjectSource(s *autoscalingv2.ObjectMetricSource, p *field.Path, refs refOptions) field.ErrorList {
	errs := validateObjectReference(s.DescribedObject, p.Child("describedObject"), refs)
	errs = append(errs, validateMetricIdentifier(s.Metric, p.Child("metric"))...)
	errs = append(errs, validateMetricTarget(s.Target, p.Child("target"))...)
	if s.Target.Value == nil && s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value or averageValue"))
	}
	return errs
}

func validateExternalSource(s *autoscalingv2.ExternalMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(s.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(s.Target, p.Child("target"))...)
	if s.Target.Value == nil && s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
	}
	if s.Target.Value != nil && s.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "value"), "may not set both a target value for metric and a per-pod target"))
	}
	return errs
}

func validatePodsSource(s *autoscalingv2.PodsMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(s.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(s.Target, p.Child("target"))...)
	if s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must specify a positive target averageValue"))
	}
	return errs
}

func validateResourceSource(s *autoscalingv2.ResourceMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	}
	errs = append(errs, validateMetricTarget(s.Target, p.Child("target"))...)
	errs = append(errs, utilizationOrValue(s.Target, p.Child("target"))...)
	return errs
}

func validateContainerResourceSource(s *autoscalingv2.ContainerResourceMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	}
	if s.Container == "" {
		errs = append(errs, field.Required(p.Child("container"), "must specify a container"))
	} else {
		for _, msg := range validation.IsDNS1123Label(s.Container) {
			errs = append(errs, field.Invalid(p.Child("container"), s.Container, msg))
		}
	}
	errs = append(errs, validateMetricTarget(s.Target, p.Child("target"))...)
	errs = append(errs, utilizationOrValue(s.Target, p.Child("target"))...)
	return errs
}

func utilizationOrValue(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.AverageUtilization == nil && t.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if t.AverageUtilization != nil && t.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateMetricTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(p.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("averageValue"), t.AverageValue, "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(p.Child("averageUtilization"), t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, p *field.Path) field.ErrorList {
	if id.Name == "" {
		return field.ErrorList{field.Required(p.Child("name"), "must specify a metric name")}
	}
	var errs field.ErrorList
	for _, msg := range path.IsValidPathSegmentName(id.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), id.Name, msg))
	}
	return errs
}
