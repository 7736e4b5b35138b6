package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func clusterRoles() registry.Resource {
	return registry.Resource{
		Kind:     rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
		Plural:   "clusterroles",
		Singular: "clusterrole",
		Strategy: registry.Strategy{
			ValidateName: rbacName,
			Validate: func(obj runtime.Object) field.ErrorList {
				cr := obj.(*rbacv1.ClusterRole)
				errs := validateRules(cr.Rules, false)
				return append(errs, validateAggregationRule(cr.AggregationRule)...)
			},
		},
	}
}

// validateAggregationRule: an aggregated cluster role selects the roles
// whose rules it gathers with at least one valid label selector.
func validateAggregationRule(ar *rbacv1.AggregationRule) field.ErrorList {
	if ar == nil {
		return nil
	}
	p := field.NewPath("aggregationRule", "clusterRoleSelectors")
	var errs field.ErrorList
	if len(ar.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	for i := range ar.ClusterRoleSelectors {
		sel := &ar.ClusterRoleSelectors[i]
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p.Index(i))...)
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(p.Index(i), sel, "invalid label selector."))
		}
	}
	return errs
}
