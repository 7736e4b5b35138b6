package admissionregistration

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func validatingAdmissionPolicyBindings() registry.Resource {
	return registry.Resource{
		Kind:             admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"),
		Plural:           "validatingadmissionpolicybindings",
		Singular:         "validatingadmissionpolicybinding",
		Categories:       []string{"api-extensions"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				defaultMatchResources(obj.(*admissionv1.ValidatingAdmissionPolicyBinding).Spec.MatchResources)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				s := &obj.(*admissionv1.ValidatingAdmissionPolicyBinding).Spec
				p := field.NewPath("spec")
				errs := validateBinding(s.PolicyName, s.ParamRef, s.MatchResources, p)
				return append(errs, validateValidationActions(s.ValidationActions, p.Child("validationActions"))...)
			},
		},
	}
}

// validateBinding checks what both kinds of policy binding have.
func validateBinding(policyName string, ref *admissionv1.ParamRef, m *admissionv1.MatchResources, p *field.Path) field.ErrorList {
	errs := validatePolicyName(policyName, p.Child("policyName"))
	errs = append(errs, validateParamRef(ref, p.Child("paramRef"))...)
	return append(errs, validateMatchResources(m, p.Child("matchResources"))...)
}
