package policy

import (
	"context"
	"strconv"

	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func podDisruptionBudgets() registry.Resource {
	return registry.Resource{
		Kind:             policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
		Plural:           "poddisruptionbudgets",
		Singular:         "poddisruptionbudget",
		ShortNames:       []string{"pdb"},
		Namespaced:       true,
		Subresources:     []string{"status"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*policyv1.PodDisruptionBudget).Status = policyv1.PodDisruptionBudgetStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validatePDBSpec(&obj.(*policyv1.PodDisruptionBudget).Spec, field.NewPath("spec"))
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				return validatePDBStatus(&obj.(*policyv1.PodDisruptionBudget).Status, field.NewPath("status"))
			},
		},
	}
}

var unhealthyPodEvictionPolicies = []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}

func validatePDBSpec(spec *policyv1.PodDisruptionBudgetSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(p, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if spec.MinAvailable != nil {
		errs = append(errs, validateIntOrPercent(*spec.MinAvailable, p.Child("minAvailable"))...)
	}
	if spec.MaxUnavailable != nil {
		errs = append(errs, validateIntOrPercent(*spec.MaxUnavailable, p.Child("maxUnavailable"))...)
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	if pol := spec.UnhealthyPodEvictionPolicy; pol != nil && *pol != policyv1.AlwaysAllow && *pol != policyv1.IfHealthyBudget {
		errs = append(errs, field.NotSupported(p.Child("unhealthyPodEvictionPolicy"), *pol, unhealthyPodEvictionPolicies))
	}
	return errs
}

// validateIntOrPercent: a non-negative count, or a percentage of at most
// 100%.
func validateIntOrPercent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch v.Type {
	case intstr.String:
		msgs := validation.IsValidPercent(v.StrVal)
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(p, v, msg))
		}
		if len(msgs) == 0 {
			if n, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1]); n > 100 {
				errs = append(errs, field.Invalid(p, v, "must not be greater than 100%"))
			}
		}
	case intstr.Int:
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(v.IntValue()), p)...)
	default:
		errs = append(errs, field.Invalid(p, v, "must be an integer or percentage (e.g '5%')"))
	}
	return errs
}

func validatePDBStatus(s *policyv1.PodDisruptionBudgetStatus, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateConditions(s.Conditions, p.Child("conditions"))
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.DisruptionsAllowed), p.Child("disruptionsAllowed"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.CurrentHealthy), p.Child("currentHealthy"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.DesiredHealthy), p.Child("desiredHealthy"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(s.ExpectedPods), p.Child("expectedPods"))...)
	return errs
}
