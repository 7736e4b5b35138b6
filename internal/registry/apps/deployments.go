package apps

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func deployments() registry.Resource {
	return registry.Resource{
		Kind:             appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Plural:           "deployments",
		Singular:         "deployment",
		ShortNames:       []string{"deploy"},
		Categories:       []string{"all"},
		Namespaced:       true,
		Subresources:     []string{"status", "scale"},
		Scale:            registry.ReplicasScale,
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultDeployment(obj.(*appsv1.Deployment)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{}
			},
			PrepareForUpdate: func(_ context.Context, obj, old runtime.Object) {
				d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
				// Annotations are copied onto the ReplicaSets, so upstream
				// bumps generation when they change too.
				if !equality.Semantic.DeepEqual(d.Annotations, o.Annotations) {
					d.Generation = o.Generation + 1
				}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateDeploymentSpec(&obj.(*appsv1.Deployment).Spec, field.NewPath("spec"))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return immutableSelector(obj.(*appsv1.Deployment).Spec.Selector, old.(*appsv1.Deployment).Spec.Selector)
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
				errs := validateDeploymentStatus(&d.Status, field.NewPath("status"))
				return append(errs, validateCollisionCount(d.Status.CollisionCount, o.Status.CollisionCount)...)
			},
		},
	}
}

// defaultDeployment applies upstream's apps/v1 Deployment defaults.
func defaultDeployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = int32Ptr(1)
	}
	s := &d.Spec.Strategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromString("25%")
			s.RollingUpdate.MaxUnavailable = &v
		}
		if s.RollingUpdate.MaxSurge == nil {
			v := intstr.FromString("25%")
			s.RollingUpdate.MaxSurge = &v
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = int32Ptr(600)
	}
	podspec.DefaultPodTemplateSpec(&d.Spec.Template)
}

func validateDeploymentSpec(spec *appsv1.DeploymentSpec, p *field.Path) field.ErrorList {
	errs := nonNegative(int64(deref32(spec.Replicas)), p.Child("replicas"))
	errs = append(errs, validateRequiredSelector(spec.Selector, p.Child("selector"), "deployment")...)
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		errs = append(errs, field.Invalid(p.Child("selector"), spec.Selector, "invalid label selector"))
	} else {
		errs = append(errs, validateReplicaSetTemplate(&spec.Template, sel, p.Child("template"), "ReplicaSet")...)
	}
	errs = append(errs, validateDeploymentStrategy(&spec.Strategy, p.Child("strategy"))...)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.RevisionHistoryLimit), p.Child("revisionHistoryLimit"))...)
	}
	if spec.ProgressDeadlineSeconds != nil {
		errs = append(errs, nonNegative(int64(*spec.ProgressDeadlineSeconds), p.Child("progressDeadlineSeconds"))...)
		if *spec.ProgressDeadlineSeconds <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(p.Child("progressDeadlineSeconds"), *spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			errs = append(errs, field.Required(p.Child("rollingUpdate"), "this should be defaulted and never be nil"))
			break
		}
		ru := s.RollingUpdate
		rp := p.Child("rollingUpdate")
		maxUnavailable, maxSurge := derefIntOrString(ru.MaxUnavailable), derefIntOrString(ru.MaxSurge)
		errs = append(errs, validatePositiveIntOrPercent(maxUnavailable, rp.Child("maxUnavailable"))...)
		errs = append(errs, validatePositiveIntOrPercent(maxSurge, rp.Child("maxSurge"))...)
		if intOrPercentValue(maxUnavailable) == 0 && intOrPercentValue(maxSurge) == 0 {
			errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), maxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
		errs = append(errs, notMoreThan100Percent(maxUnavailable, rp.Child("maxUnavailable"))...)
	default:
		errs = append(errs, field.NotSupported(p, s, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}))
	}
	return errs
}

func validateDeploymentStatus(s *appsv1.DeploymentStatus, p *field.Path) field.ErrorList {
	errs := nonNegative(s.ObservedGeneration, p.Child("observedGeneration"))
	errs = append(errs, nonNegative(int64(s.Replicas), p.Child("replicas"))...)
	errs = append(errs, nonNegative(int64(s.UpdatedReplicas), p.Child("updatedReplicas"))...)
	errs = append(errs, nonNegative(int64(s.ReadyReplicas), p.Child("readyReplicas"))...)
	errs = append(errs, nonNegative(int64(s.AvailableReplicas), p.Child("availableReplicas"))...)
	errs = append(errs, nonNegative(int64(s.UnavailableReplicas), p.Child("unavailableReplicas"))...)
	if s.TerminatingReplicas != nil {
		errs = append(errs, nonNegative(int64(*s.TerminatingReplicas), p.Child("terminatingReplicas"))...)
	}
	if s.CollisionCount != nil {
		errs = append(errs, nonNegative(int64(*s.CollisionCount), p.Child("collisionCount"))...)
	}
	const msg = "cannot be greater than status.replicas"
	if s.UpdatedReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("updatedReplicas"), s.UpdatedReplicas, msg))
	}
	if s.ReadyReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), s.ReadyReplicas, msg))
	}
	if s.AvailableReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, msg))
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}
