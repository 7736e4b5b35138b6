package coordination

import (
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func leases() registry.Resource {
	return registry.Resource{
		Kind:       coordinationv1.SchemeGroupVersion.WithKind("Lease"),
		Plural:     "leases",
		Singular:   "lease",
		Namespaced: true,
		Strategy: registry.Strategy{
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateLeaseSpec(&obj.(*coordinationv1.Lease).Spec, field.NewPath("spec"))
			},
		},
	}
}

// knownLeaseStrategies are the strategies without a domain prefix that
// Kubernetes defines.
var knownLeaseStrategies = []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}

func validateLeaseSpec(s *coordinationv1.LeaseSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.LeaseDurationSeconds != nil && *s.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(p.Child("leaseDurationSeconds"), s.LeaseDurationSeconds, "must be greater than 0"))
	}
	if s.LeaseTransitions != nil && *s.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(p.Child("leaseTransitions"), s.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if s.Strategy != nil {
		errs = append(errs, validateStrategy(*s.Strategy, p.Child("strategy"))...)
	}
	if s.PreferredHolder != nil && *s.PreferredHolder != "" && (s.Strategy == nil || *s.Strategy == "") {
		errs = append(errs, field.Forbidden(p.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

// validateStrategy accepts a Kubernetes-defined strategy or a
// domain-prefixed one ("example.com/my-strategy"). The doubled
// "strategy.strategy" path is upstream's.
func validateStrategy(s coordinationv1.CoordinatedLeaseStrategy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !strings.Contains(string(s), "/") {
		for _, k := range knownLeaseStrategies {
			if k == s {
				return nil
			}
		}
		return field.ErrorList{field.NotSupported(p.Child("strategy"), s, knownLeaseStrategies)}
	}
	for _, msg := range validation.IsQualifiedName(string(s)) {
		errs = append(errs, field.Invalid(p.Child("strategy"), s, msg))
	}
	return errs
}
