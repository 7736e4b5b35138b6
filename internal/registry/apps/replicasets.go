package apps

import (
	"context"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func replicaSets() registry.Resource {
	return registry.Resource{
		Kind:             appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		Plural:           "replicasets",
		Singular:         "replicaset",
		ShortNames:       []string{"rs"},
		Categories:       []string{"all"},
		Namespaced:       true,
		Subresources:     []string{"status", "scale"},
		Scale:            registry.ReplicasScale,
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				rs := obj.(*appsv1.ReplicaSet)
				if rs.Spec.Replicas == nil {
					rs.Spec.Replicas = int32Ptr(1)
				}
				podspec.DefaultPodTemplateSpec(&rs.Spec.Template)
			},
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*appsv1.ReplicaSet).Status = appsv1.ReplicaSetStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateReplicaSetSpec(&obj.(*appsv1.ReplicaSet).Spec, field.NewPath("spec"))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return immutableSelector(obj.(*appsv1.ReplicaSet).Spec.Selector, old.(*appsv1.ReplicaSet).Spec.Selector)
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				return validateReplicaSetStatus(&obj.(*appsv1.ReplicaSet).Status, field.NewPath("status"))
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*appsv1.ReplicaSet).Status.Replicas))}
			},
		},
	}
}

func validateReplicaSetSpec(spec *appsv1.ReplicaSetSpec, p *field.Path) field.ErrorList {
	errs := nonNegative(int64(deref32(spec.Replicas)), p.Child("replicas"))
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	// Upstream's message names "deployment" here too.
	errs = append(errs, validateRequiredSelector(spec.Selector, p.Child("selector"), "deployment")...)
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		errs = append(errs, field.Invalid(p.Child("selector"), spec.Selector, "invalid label selector"))
	} else {
		errs = append(errs, validateReplicaSetTemplate(&spec.Template, sel, p.Child("template"), "ReplicaSet")...)
	}
	return errs
}

func validateReplicaSetStatus(s *appsv1.ReplicaSetStatus, p *field.Path) field.ErrorList {
	errs := nonNegative(int64(s.Replicas), p.Child("replicas"))
	errs = append(errs, nonNegative(int64(s.FullyLabeledReplicas), p.Child("fullyLabeledReplicas"))...)
	errs = append(errs, nonNegative(int64(s.ReadyReplicas), p.Child("readyReplicas"))...)
	errs = append(errs, nonNegative(int64(s.AvailableReplicas), p.Child("availableReplicas"))...)
	if s.TerminatingReplicas != nil {
		errs = append(errs, nonNegative(int64(*s.TerminatingReplicas), p.Child("terminatingReplicas"))...)
	}
	errs = append(errs, nonNegative(s.ObservedGeneration, p.Child("observedGeneration"))...)
	const msg = "cannot be greater than status.replicas"
	if s.FullyLabeledReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("fullyLabeledReplicas"), s.FullyLabeledReplicas, msg))
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
