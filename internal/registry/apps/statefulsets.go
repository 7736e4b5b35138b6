package apps

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

func statefulSets() registry.Resource {
	return registry.Resource{
		Kind:             appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		Plural:           "statefulsets",
		Singular:         "statefulset",
		ShortNames:       []string{"sts"},
		Categories:       []string{"all"},
		Namespaced:       true,
		Subresources:     []string{"status", "scale"},
		Scale:            registry.ReplicasScale,
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultStatefulSet(obj.(*appsv1.StatefulSet)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*appsv1.StatefulSet).Status = appsv1.StatefulSetStatus{}
			},
			// Pod names and hostnames derive from the name: a DNS label.
			ValidateName: apivalidation.NameIsDNSLabel,
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateStatefulSetSpec(&obj.(*appsv1.StatefulSet).Spec, field.NewPath("spec"))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateStatefulSetUpdate(obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet))
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				s, o := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
				errs := validateStatefulSetStatus(&s.Status, field.NewPath("status"))
				return append(errs, validateCollisionCount(s.Status.CollisionCount, o.Status.CollisionCount)...)
			},
		},
	}
}

// defaultStatefulSet applies upstream's apps/v1 StatefulSet defaults.
func defaultStatefulSet(s *appsv1.StatefulSet) {
	if s.Spec.PodManagementPolicy == "" {
		s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	us := &s.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if us.Type == appsv1.RollingUpdateStatefulSetStrategyType && us.RollingUpdate != nil && us.RollingUpdate.Partition == nil {
		us.RollingUpdate.Partition = int32Ptr(0)
	}
	if s.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	rp := s.Spec.PersistentVolumeClaimRetentionPolicy
	if rp.WhenDeleted == "" {
		rp.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if rp.WhenScaled == "" {
		rp.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.Spec.Replicas == nil {
		s.Spec.Replicas = int32Ptr(1)
	}
	if s.Spec.RevisionHistoryLimit == nil {
		s.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	podspec.DefaultPodTemplateSpec(&s.Spec.Template)
	for i := range s.Spec.VolumeClaimTemplates {
		pvc := &s.Spec.VolumeClaimTemplates[i]
		podspec.DefaultPersistentVolumeClaimSpec(&pvc.Spec)
		if pvc.Status.Phase == "" {
			pvc.Status.Phase = corev1.ClaimPending
		}
	}
}

func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(p.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(p.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}

	usPath := p.Child("updateStrategy")
	switch spec.UpdateStrategy.Type {
	case "":
		errs = append(errs, field.Required(usPath, ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if spec.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(usPath.Child("rollingUpdate"), spec.UpdateStrategy.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := spec.UpdateStrategy.RollingUpdate; ru != nil {
			rp := usPath.Child("rollingUpdate")
			errs = append(errs, nonNegative(int64(deref32(ru.Partition)), rp.Child("partition"))...)
			if ru.MaxUnavailable != nil {
				mp := rp.Child("maxUnavailable")
				errs = append(errs, validatePositiveIntOrPercent(*ru.MaxUnavailable, mp)...)
				if intOrPercentValue(*ru.MaxUnavailable) == 0 {
					errs = append(errs, field.Invalid(mp, *ru.MaxUnavailable, "cannot be 0"))
				}
				errs = append(errs, notMoreThan100Percent(*ru.MaxUnavailable, mp)...)
			}
		}
	default:
		errs = append(errs, field.Invalid(usPath, spec.UpdateStrategy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}

	if rp := spec.PersistentVolumeClaimRetentionPolicy; rp != nil {
		pp := p.Child("persistentVolumeClaimRetentionPolicy")
		errs = append(errs, validateRetentionPolicyType(rp.WhenDeleted, pp.Child("whenDeleted"))...)
		errs = append(errs, validateRetentionPolicyType(rp.WhenScaled, pp.Child("whenScaled"))...)
	}

	errs = append(errs, nonNegative(int64(deref32(spec.Replicas)), p.Child("replicas"))...)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	if spec.Ordinals != nil {
		errs = append(errs, nonNegative(int64(spec.Ordinals.Start), p.Child("ordinals.start"))...)
	}

	errs = append(errs, validateRequiredSelector(spec.Selector, p.Child("selector"), "statefulset")...)
	tp := p.Child("template")
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		errs = append(errs, field.Invalid(p.Child("selector"), spec.Selector, ""))
	} else {
		// Upstream checks only the template's metadata here, not its
		// pod spec (volumes may come from volumeClaimTemplates).
		errs = append(errs, selectorMismatch(sel, &spec.Template, tp)...)
		errs = append(errs, metav1validation.ValidateLabels(spec.Template.Labels, tp.Child("labels"))...)
		errs = append(errs, apivalidation.ValidateAnnotations(spec.Template.Annotations, tp.Child("annotations"))...)
	}
	errs = append(errs, validateAlwaysRestart(&spec.Template, tp, "StatefulSet")...)
	return errs
}

func validateRetentionPolicyType(t appsv1.PersistentVolumeClaimRetentionPolicyType, p *field.Path) field.ErrorList {
	switch t {
	case appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, t, []string{
		string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType),
		string(appsv1.DeletePersistentVolumeClaimRetentionPolicyType),
	})}
}

// validateStatefulSetUpdate allows changes only to replicas, ordinals,
// template, updateStrategy, persistentVolumeClaimRetentionPolicy,
// and minReadySeconds, as upstream does.
func validateStatefulSetUpdate(s, old *appsv1.StatefulSet) field.ErrorList {
	c := s.Spec.DeepCopy()
	c.Replicas = old.Spec.Replicas
	c.Template = old.Spec.Template
	c.UpdateStrategy = old.Spec.UpdateStrategy
	c.MinReadySeconds = old.Spec.MinReadySeconds
	c.Ordinals = old.Spec.Ordinals
	c.PersistentVolumeClaimRetentionPolicy = old.Spec.PersistentVolumeClaimRetentionPolicy
	if !equality.Semantic.DeepEqual(*c, old.Spec) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
	}
	return nil
}

func validateStatefulSetStatus(s *appsv1.StatefulSetStatus, p *field.Path) field.ErrorList {
	errs := nonNegative(int64(s.Replicas), p.Child("replicas"))
	errs = append(errs, nonNegative(int64(s.ReadyReplicas), p.Child("readyReplicas"))...)
	errs = append(errs, nonNegative(int64(s.CurrentReplicas), p.Child("currentReplicas"))...)
	errs = append(errs, nonNegative(int64(s.UpdatedReplicas), p.Child("updatedReplicas"))...)
	errs = append(errs, nonNegative(int64(s.AvailableReplicas), p.Child("availableReplicas"))...)
	errs = append(errs, nonNegative(s.ObservedGeneration, p.Child("observedGeneration"))...)
	if s.CollisionCount != nil {
		errs = append(errs, nonNegative(int64(*s.CollisionCount), p.Child("collisionCount"))...)
	}
	const msg = "cannot be greater than status.replicas"
	if s.ReadyReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), s.ReadyReplicas, msg))
	}
	if s.CurrentReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("currentReplicas"), s.CurrentReplicas, msg))
	}
	if s.UpdatedReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("updatedReplicas"), s.UpdatedReplicas, msg))
	}
	if s.AvailableReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, msg))
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than status.readyReplicas"))
	}
	return errs
}
