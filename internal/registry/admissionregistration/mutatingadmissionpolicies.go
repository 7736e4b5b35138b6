package admissionregistration

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

// Mutating policies may match CREATE, UPDATE and CONNECT, not DELETE.
var mutatingPolicyOperations = []string{"*", "CONNECT", "CREATE", "UPDATE"}

func mutatingAdmissionPolicies() registry.Resource {
	return registry.Resource{
		Kind:             admissionv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"),
		Plural:           "mutatingadmissionpolicies",
		Singular:         "mutatingadmissionpolicy",
		Categories:       []string{"api-extensions"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				s := &obj.(*admissionv1.MutatingAdmissionPolicy).Spec
				if s.FailurePolicy == nil {
					s.FailurePolicy = ptr(admissionv1.Fail)
				}
				defaultMatchResources(s.MatchConstraints)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateMutatingPolicySpec(&obj.(*admissionv1.MutatingAdmissionPolicy).Spec, field.NewPath("spec"))
			},
		},
	}
}

func validateMutatingPolicySpec(s *admissionv1.MutatingAdmissionPolicySpec, p *field.Path) field.ErrorList {
	errs := validateFailurePolicy(s.FailurePolicy, p.Child("failurePolicy"))
	if s.ParamKind != nil {
		errs = append(errs, validateParamKind(*s.ParamKind, p.Child("paramKind"))...)
	}
	errs = append(errs, validateMatchConstraints(s.MatchConstraints, p.Child("matchConstraints"))...)
	if s.MatchConstraints != nil {
		errs = append(errs, validateMutatingOperations(s.MatchConstraints.ResourceRules, p.Child("matchConstraints", "resourceRules", "operations"))...)
	}
	c := newCELCompiler(s.ParamKind != nil)
	errs = append(errs, c.matchConditions(s.MatchConditions, p.Child("matchConditions"))...)
	errs = append(errs, c.variables(s.Variables, p.Child("variables"))...)
	if len(s.Mutations) == 0 {
		errs = append(errs, field.Required(p.Child("mutations"), "mutations must contain at least one item"))
	}
	for i := range s.Mutations {
		errs = append(errs, c.mutation(&s.Mutations[i], p.Child("mutations").Index(i))...)
	}
	policies := []string{string(admissionv1.IfNeededReinvocationPolicy), string(admissionv1.NeverReinvocationPolicy)}
	switch rp := s.ReinvocationPolicy; {
	case rp == "":
		errs = append(errs, field.Required(p.Child("reinvocationPolicy"), ""))
	case !has(policies, string(rp)):
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), rp, policies))
	}
	return errs
}

func validateMutatingOperations(rules []admissionv1.NamedRuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, r := range rules {
		for _, op := range r.Operations {
			if !has(mutatingPolicyOperations, string(op)) {
				errs = append(errs, field.NotSupported(p, op, mutatingPolicyOperations))
			}
		}
	}
	return errs
}

func mutatingAdmissionPolicyBindings() registry.Resource {
	return registry.Resource{
		Kind:             admissionv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding"),
		Plural:           "mutatingadmissionpolicybindings",
		Singular:         "mutatingadmissionpolicybinding",
		Categories:       []string{"api-extensions"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				defaultMatchResources(obj.(*admissionv1.MutatingAdmissionPolicyBinding).Spec.MatchResources)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				s := &obj.(*admissionv1.MutatingAdmissionPolicyBinding).Spec
				p := field.NewPath("spec")
				errs := validateBinding(s.PolicyName, s.ParamRef, s.MatchResources, p)
				if s.MatchResources != nil {
					errs = append(errs, validateMutatingOperations(s.MatchResources.ResourceRules, p.Child("matchResources", "resourceRules", "operations"))...)
				}
				return errs
			},
		},
	}
}
