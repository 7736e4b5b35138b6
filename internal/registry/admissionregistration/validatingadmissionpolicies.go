package admissionregistration

import (
	"context"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func validatingAdmissionPolicies() registry.Resource {
	return registry.Resource{
		Kind:             admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"),
		Plural:           "validatingadmissionpolicies",
		Singular:         "validatingadmissionpolicy",
		Categories:       []string{"api-extensions"},
		Subresources:     []string{"status"},
		TracksGeneration: true,
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) {
				s := &obj.(*admissionv1.ValidatingAdmissionPolicy).Spec
				if s.FailurePolicy == nil {
					s.FailurePolicy = ptr(admissionv1.Fail)
				}
				defaultMatchResources(s.MatchConstraints)
			},
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*admissionv1.ValidatingAdmissionPolicy).Status = admissionv1.ValidatingAdmissionPolicyStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				p := obj.(*admissionv1.ValidatingAdmissionPolicy)
				return validateValidatingPolicySpec(p.Name, &p.Spec, field.NewPath("spec"))
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				st := &obj.(*admissionv1.ValidatingAdmissionPolicy).Status
				sp := field.NewPath("status")
				var errs field.ErrorList
				if st.TypeChecking != nil {
					errs = validateExpressionWarnings(st.TypeChecking.ExpressionWarnings, sp.Child("typeChecking", "expressionWarnings"))
				}
				return append(errs, metav1validation.ValidateConditions(st.Conditions, sp.Child("conditions"))...)
			},
		},
	}
}

func validateValidatingPolicySpec(name string, s *admissionv1.ValidatingAdmissionPolicySpec, p *field.Path) field.ErrorList {
	errs := validateFailurePolicy(s.FailurePolicy, p.Child("failurePolicy"))
	if s.ParamKind != nil {
		errs = append(errs, validateParamKind(*s.ParamKind, p.Child("paramKind"))...)
	}
	errs = append(errs, validateMatchConstraints(s.MatchConstraints, p.Child("matchConstraints"))...)
	c := newCELCompiler(s.ParamKind != nil)
	errs = append(errs, c.matchConditions(s.MatchConditions, p.Child("matchConditions"))...)
	errs = append(errs, c.variables(s.Variables, p.Child("variables"))...)
	if len(s.Validations) == 0 && len(s.AuditAnnotations) == 0 {
		const msg = "validations or auditAnnotations must contain at least one item"
		return append(errs, field.Required(p.Child("validations"), msg), field.Required(p.Child("auditAnnotations"), msg))
	}
	for i := range s.Validations {
		errs = append(errs, c.validation(&s.Validations[i], p.Child("validations").Index(i))...)
	}
	return append(errs, c.auditAnnotations(name, s.AuditAnnotations, p.Child("auditAnnotations"))...)
}
