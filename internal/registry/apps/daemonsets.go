package apps

import (
	"context"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func daemonSets() registry.Resource {
	return registry.Resource{
		Kind:             appsv1.SchemeGroupVersion.WithKind("DaemonSet"),
		Plural:           "daemonsets",
		Singular:         "daemonset",
		ShortNames:       []string{"ds"},
		Categories:       []string{"all"},
		Namespaced:       true,
		Subresources:     []string{"status"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultDaemonSet(obj.(*appsv1.DaemonSet)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				ds := obj.(*appsv1.DaemonSet)
				ds.Status = appsv1.DaemonSetStatus{}
				if templateGeneration(ds) < 1 {
					setTemplateGeneration(ds, 1)
				}
			},
			PrepareForUpdate: func(_ context.Context, obj, old runtime.Object) {
				ds, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
				// The template generation is the server's to keep: it goes up
				// by one with every template change (upstream keeps it in
				// spec.templateGeneration internally, shown in apps/v1 as
				// this annotation).
				gen := templateGeneration(o)
				if !equality.Semantic.DeepEqual(ds.Spec.Template, o.Spec.Template) {
					gen++
				}
				setTemplateGeneration(ds, gen)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateDaemonSetSpec(&obj.(*appsv1.DaemonSet).Spec, field.NewPath("spec"))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return immutableSelector(obj.(*appsv1.DaemonSet).Spec.Selector, old.(*appsv1.DaemonSet).Spec.Selector)
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				ds, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
				errs := validateDaemonSetStatus(&ds.Status, field.NewPath("status"))
				return append(errs, validateCollisionCount(ds.Status.CollisionCount, o.Status.CollisionCount)...)
			},
		},
	}
}

func templateGeneration(ds *appsv1.DaemonSet) int64 {
	n, err := strconv.ParseInt(ds.Annotations[appsv1.DeprecatedTemplateGeneration], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func setTemplateGeneration(ds *appsv1.DaemonSet, gen int64) {
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(gen, 10)
}

// defaultDaemonSet applies upstream's apps/v1 DaemonSet defaults.
func defaultDaemonSet(ds *appsv1.DaemonSet) {
	us := &ds.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if us.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if us.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromInt32(1)
			us.RollingUpdate.MaxUnavailable = &v
		}
		if us.RollingUpdate.MaxSurge == nil {
			v := intstr.FromInt32(0)
			us.RollingUpdate.MaxSurge = &v
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	podspec.DefaultPodTemplateSpec(&ds.Spec.Template)
}

func validateDaemonSetSpec(spec *appsv1.DaemonSetSpec, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(spec.Selector, strictSelector, p.Child("selector"))
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	if spec.Selector != nil && len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(p.Child("selector"), spec.Selector, "empty selector is invalid for daemonset"))
	}
	tp := p.Child("template")
	errs = append(errs, podspec.ValidatePodTemplateSpec(&spec.Template, tp)...)
	errs = append(errs, validateAlwaysRestart(&spec.Template, tp, "DaemonSet")...)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	errs = append(errs, validateDaemonSetUpdateStrategy(&spec.UpdateStrategy, p.Child("updateStrategy"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.RevisionHistoryLimit), p.Child("revisionHistoryLimit"))...)
	}
	return errs
}

func validateDaemonSetUpdateStrategy(s *appsv1.DaemonSetUpdateStrategy, p *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(p.Child("rollingUpdate"), "")}
		}
		rp := p.Child("rollingUpdate")
		maxUnavailable, maxSurge := derefIntOrString(s.RollingUpdate.MaxUnavailable), derefIntOrString(s.RollingUpdate.MaxSurge)
		errs := validatePositiveIntOrPercent(maxUnavailable, rp.Child("maxUnavailable"))
		errs = append(errs, validatePositiveIntOrPercent(maxSurge, rp.Child("maxSurge"))...)
		errs = append(errs, notMoreThan100Percent(maxUnavailable, rp.Child("maxUnavailable"))...)
		errs = append(errs, notMoreThan100Percent(maxSurge, rp.Child("maxSurge"))...)
		hasUnavailable, hasSurge := intOrPercentValue(maxUnavailable) != 0, intOrPercentValue(maxSurge) != 0
		switch {
		case hasUnavailable && hasSurge:
			errs = append(errs, field.Invalid(rp.Child("maxSurge"), maxSurge, "may not be set when maxUnavailable is non-zero"))
		case !hasUnavailable && !hasSurge:
			errs = append(errs, field.Required(rp.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
		}
		return errs
	}
	return field.ErrorList{field.NotSupported(p, s, []string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)})}
}

func validateDaemonSetStatus(s *appsv1.DaemonSetStatus, p *field.Path) field.ErrorList {
	errs := nonNegative(int64(s.CurrentNumberScheduled), p.Child("currentNumberScheduled"))
	errs = append(errs, nonNegative(int64(s.NumberMisscheduled), p.Child("numberMisscheduled"))...)
	errs = append(errs, nonNegative(int64(s.DesiredNumberScheduled), p.Child("desiredNumberScheduled"))...)
	errs = append(errs, nonNegative(int64(s.NumberReady), p.Child("numberReady"))...)
	errs = append(errs, nonNegative(s.ObservedGeneration, p.Child("observedGeneration"))...)
	errs = append(errs, nonNegative(int64(s.UpdatedNumberScheduled), p.Child("updatedNumberScheduled"))...)
	errs = append(errs, nonNegative(int64(s.NumberAvailable), p.Child("numberAvailable"))...)
	errs = append(errs, nonNegative(int64(s.NumberUnavailable), p.Child("numberUnavailable"))...)
	if s.CollisionCount != nil {
		errs = append(errs, nonNegative(int64(*s.CollisionCount), p.Child("collisionCount"))...)
	}
	return errs
}
