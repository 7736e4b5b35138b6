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
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				defaultMatchResources(obj.(*admissionv1.ValidatingAdmissionPolicyBinding).Spec.MatchResources)
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				s := &obj.(*admissionv1.ValidatingAdmissionPolicyBinding).Spec
				p := field.NewPath("spec")
				errs := validatePolicyName(s.PolicyName, p.Child("policyName"))
				errs = append(errs, validateParamRef(s.ParamRef, p.Child("paramRef"))...)
				errs = append(errs, validateMatchResources(s.MatchResources, p.Child("matchResources"))...)
				return append(errs, validateValidationActions(s.ValidationActions, p.Child("validationActions"))...)
			},
		},
	}
}
